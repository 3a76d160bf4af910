#include "daemon/api/auth.h"

#include "common/log.h"
#include "daemon/quota/quota.h"
#include "farm/v1/rpc_status.pb.h"

namespace farm::api {

Result<Principal> AuthorizeCall(TokenAuthority& authority, const grpc::ServerContextBase& call,
                                Need need, bool check_role) {
  const auto& md = call.client_metadata();
  auto it = md.find("authorization");
  std::string value = it == md.end() ? "" : std::string(it->second.data(), it->second.size());
  return check_role ? authority.Authorize(value, need) : authority.Identify(value);
}

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  std::string message = log::Redact(status.message());
  // Every answer farmd gives carries its status in the details too, so that a client tells
  // farmd's own UNAVAILABLE (an upstream it could not read) from a farmd it cannot reach,
  // which gRPC reports with the same code and no details.
  farm::v1::RpcStatus details;
  details.set_code(static_cast<int32_t>(code));
  details.set_message(message);
  if (std::optional<int64_t> retry_ms = quota::RetryAfterMs(status)) {
    // The standard detail clients read to know when to call again.
    farm::v1::RetryInfo retry;
    retry.mutable_retry_delay()->set_seconds(*retry_ms / 1000);
    retry.mutable_retry_delay()->set_nanos(static_cast<int32_t>(*retry_ms % 1000) * 1000000);
    google::protobuf::Any* any = details.add_details();
    any->set_type_url(kRetryInfoTypeUrl);
    any->set_value(retry.SerializeAsString());
  }
  return grpc::Status(code, message, details.SerializeAsString());
}

}  // namespace farm::api
