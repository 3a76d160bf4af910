#include "daemon/api/auth.h"

#include "common/log.h"

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
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      log::Redact(status.message()));
}

}  // namespace farm::api
