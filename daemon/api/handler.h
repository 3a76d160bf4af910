// Handle(): the one boundary every gRPC handler goes through. It authorizes the call,
// runs the body, converts its Status to a gRPC status (messages redacted), and keeps any
// exception inside the handler.
#ifndef FARM_DAEMON_API_HANDLER_H_
#define FARM_DAEMON_API_HANDLER_H_

#include <exception>
#include <string>

#include "common/log.h"
#include "daemon/api/service_context.h"

namespace farm::api {

template <typename Body>
grpc::Status Handle(ServiceContext* ctx, grpc::ServerContext* call, Need need, Body body) {
  try {
    auto who = AuthorizeCall(*ctx->auth, *call, need);
    if (!who.ok()) return ToGrpc(who.status());
    return ToGrpc(body(who.value()));
  } catch (const std::exception& e) {
    log::Error(std::string("handler failed: ") + e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, "internal error");
  }
}

}  // namespace farm::api

#endif  // FARM_DAEMON_API_HANDLER_H_
