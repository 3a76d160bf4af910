// Handle(): the one boundary every gRPC handler goes through. It authorizes the call
// (peer certificate where farmd requires one, then the token),
// runs the body, converts its Status to a gRPC status (messages redacted), and keeps any
// exception inside the handler.
#ifndef FARM_DAEMON_API_HANDLER_H_
#define FARM_DAEMON_API_HANDLER_H_

#include <exception>
#include <string>
#include <string_view>

#include "common/log.h"
#include "daemon/api/service_context.h"

namespace farm::api {

// Authorizes a call: on a farmd that requires worker certificates, a worker call (Register
// included) must come over TLS with a client certificate farmd verified; then the token.
inline Result<Principal> AuthorizePeer(const ServiceContext& ctx,
                                       const grpc::ServerContextBase& call, Need need) {
  bool worker_call = need == Need::kWorker || need == Need::kEnroll;
  if (ctx.require_worker_certs && worker_call && !call.auth_context()->IsPeerAuthenticated()) {
    return Status::Unauthenticated(
        "this farmd requires workers to present a client certificate signed by its client CA "
        "(farm-worker --ca, --cert and --key)");
  }
  return AuthorizeCall(*ctx.auth, call, need);
}

// Runs `body` (returning Status or Result<T>) and turns an exception into Internal, logged
// as "`what` failed: ...": for gRPC callbacks and the threads that answer them, which
// nothing may throw out of.
template <typename Body>
auto Guarded(std::string_view what, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    log::Error(std::string(what) + " failed: " + e.what());
    return Status::Internal("internal error");
  }
}

template <typename Body>
grpc::Status Handle(ServiceContext* ctx, grpc::ServerContext* call, Need need, Body body) {
  try {
    auto who = AuthorizePeer(*ctx, *call, need);
    if (!who.ok()) return ToGrpc(who.status());
    return ToGrpc(body(who.value()));
  } catch (const std::exception& e) {
    log::Error(std::string("handler failed: ") + e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, "internal error");
  }
}

}  // namespace farm::api

#endif  // FARM_DAEMON_API_HANDLER_H_
