#include "cli/client.h"

#include <gtest/gtest.h>

#include "farm/v1/rpc_status.pb.h"

namespace farm::cli {
namespace {

grpc::Status WithRetryInfo(const std::string& message, int64_t seconds, int32_t nanos) {
  farm::v1::RetryInfo retry;
  retry.mutable_retry_delay()->set_seconds(seconds);
  retry.mutable_retry_delay()->set_nanos(nanos);
  farm::v1::RpcStatus details;
  details.set_code(grpc::StatusCode::RESOURCE_EXHAUSTED);
  details.set_message(message);
  auto* any = details.add_details();
  any->set_type_url("type.googleapis.com/google.rpc.RetryInfo");
  any->set_value(retry.SerializeAsString());
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, message, details.SerializeAsString());
}

TEST(FromGrpcTest, ARetryInfoIsSaidInTheMessageWhenTheServerDidNotSayIt) {
  Status s = FromGrpc(WithRetryInfo("slow down", 4, 200'000'000), "127.0.0.1:1");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "slow down; retry after 5 s");
  // farmd's own message says it already: nothing is added.
  Status said = FromGrpc(WithRetryInfo("quota: over; retry after 4 s", 4, 0), "127.0.0.1:1");
  EXPECT_EQ(said.message(), "quota: over; retry after 4 s");
  // Details that are not a RetryInfo, or not parseable, change nothing.
  grpc::Status junk(grpc::StatusCode::RESOURCE_EXHAUSTED, "full", "\xff\xff not a status");
  EXPECT_EQ(FromGrpc(junk, "127.0.0.1:1").message(), "full");
}

TEST(FromGrpcTest, FarmdsOwnUnavailableIsNotCalledFarmdDown) {
  // farmd answered: its details repeat the code (daemon/api/auth.h ToGrpc).
  farm::v1::RpcStatus details;
  details.set_code(grpc::StatusCode::UNAVAILABLE);
  details.set_message("cannot read torch's releases on cu128: connection refused");
  grpc::Status answered(grpc::StatusCode::UNAVAILABLE, details.message(),
                        details.SerializeAsString());
  Status s = FromGrpc(answered, "127.0.0.1:7171");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "farmd at 127.0.0.1:7171 answered: cannot read torch's releases on cu128: "
            "connection refused");
  // gRPC's own failure to connect has no details: farmd was not reached.
  grpc::Status refused(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses");
  EXPECT_EQ(FromGrpc(refused, "127.0.0.1:7171").message(),
            "cannot reach farmd at 127.0.0.1:7171: is it running? (failed to connect to all "
            "addresses)");
  // Details of another code, or junk, are not farmd's answer to this call.
  details.set_code(grpc::StatusCode::INTERNAL);
  grpc::Status other(grpc::StatusCode::UNAVAILABLE, "x", details.SerializeAsString());
  EXPECT_NE(FromGrpc(other, "h:1").message().find("cannot reach farmd"), std::string::npos);
  grpc::Status junk(grpc::StatusCode::UNAVAILABLE, "x", "\xff\xff");
  EXPECT_NE(FromGrpc(junk, "h:1").message().find("cannot reach farmd"), std::string::npos);
}

}  // namespace
}  // namespace farm::cli
