// Handle(): the one boundary every gRPC handler goes through (HandleMutation for the ones
// that change something, which also records them in the audit log). It authorizes the call
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
// included) must come over TLS with a client certificate farmd verified; then the token,
// and its role unless `check_role` is false (the caller then checks it).
inline Result<Principal> AuthorizePeer(const ServiceContext& ctx,
                                       const grpc::ServerContextBase& call, Need need,
                                       bool check_role = true) {
  bool worker_call = need == Need::kWorker || need == Need::kEnroll;
  if (ctx.require_worker_certs && worker_call && !call.auth_context()->IsPeerAuthenticated()) {
    return Status::Unauthenticated(
        "this farmd requires workers to present a client certificate signed by its client CA "
        "(farm-worker --ca, --cert and --key)");
  }
  return AuthorizeCall(*ctx.auth, call, need, check_role);
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

// Handle for a call that changes something (docs/security.md): the token's principal is
// read first, so that a role too weak for `need` is refused with a record of who asked;
// then `body(principal)` runs and its outcome is recorded with `*entry`, which the body may
// fill in (its target once known, what it did). A call without a valid token has no
// principal and is refused without a record.
template <typename Body>
grpc::Status HandleMutation(ServiceContext* ctx, grpc::ServerContext* call, Need need,
                            audit::Entry* entry, Body body) {
  return ToGrpc(Guarded("handler", [&]() -> Status {
    FARM_ASSIGN_OR_RETURN(Principal who, AuthorizePeer(*ctx, *call, need, /*check_role=*/false));
    return audit::Audited(ctx->audit, who, *entry, [&]() -> Status {
      FARM_RETURN_IF_ERROR(TokenAuthority::CheckRole(who, need));
      return body(who);
    });
  }));
}

// Handle for a call whose use case checks the role itself and records the call in the
// audit log (builds::Control): only the token (and the peer) is checked here.
template <typename Body>
grpc::Status HandleChecked(ServiceContext* ctx, grpc::ServerContext* call, Body body) {
  return ToGrpc(Guarded("handler", [&]() -> Status {
    FARM_ASSIGN_OR_RETURN(Principal who,
                          AuthorizePeer(*ctx, *call, Need::kViewer, /*check_role=*/false));
    return body(who);
  }));
}

template <typename Body>
grpc::Status Handle(ServiceContext* ctx, grpc::ServerContext* call, Need need, Body body) {
  return ToGrpc(Guarded("handler", [&]() -> Status {
    FARM_ASSIGN_OR_RETURN(Principal who, AuthorizePeer(*ctx, *call, need));
    return body(who);
  }));
}

}  // namespace farm::api

#endif  // FARM_DAEMON_API_HANDLER_H_
