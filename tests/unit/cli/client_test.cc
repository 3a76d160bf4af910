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

}  // namespace
}  // namespace farm::cli
