// The wheel-request RPCs of FarmService (docs/requests.md): farmctl request and farmctl
// requests, over the requests use case (requests/requests.h), which /api/v1/requests calls
// too. The use case checks the admin role of a decision and records it.
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/requests/requests.h"

namespace farm::api {
namespace {

void RequestToProto(const store::RequestRow& row, farm::v1::WheelRequest* out) {
  out->set_id(row.id);
  farm::v1::WheelRequestSpec* spec = out->mutable_spec();
  spec->set_package(row.package);
  spec->set_version(row.version);
  spec->set_python(row.python);
  spec->set_torch(row.torch);
  spec->set_cuda(row.cuda);
  spec->set_compute_capability(row.compute_capability);
  spec->set_platform(row.platform);
  out->set_state(std::string(requests::StateName(static_cast<requests::State>(row.state))));
  out->set_reason(row.reason);
  out->set_decided_by(row.decided_by);
  out->set_recipe(row.recipe_name);
  out->set_arch_list(row.arch_list);
  out->set_build_id(row.build_id);
  out->set_job_id(row.job_id);
  out->set_wheel(row.wheel);
  out->set_filings(row.filings);
  out->set_anonymous(row.first_by.empty());
  out->set_created_ms(row.created_ms);
  out->set_updated_ms(row.updated_ms);
}

Status NeedRequests(const ServiceContext* ctx) {
  return ctx->requests ? Status::Ok() : Status::Unavailable("this farmd takes no wheel requests");
}

}  // namespace

grpc::Status ClientService::FileWheelRequest(grpc::ServerContext* call,
                                             const farm::v1::WheelRequestSpec* req,
                                             farm::v1::FileWheelRequestResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedRequests(ctx_));
    requests::Spec spec{.package = req->package(),
                        .version = req->version(),
                        .python = req->python(),
                        .torch = req->torch(),
                        .cuda = req->cuda(),
                        .compute_capability = req->compute_capability(),
                        .platform = req->platform()};
    FARM_ASSIGN_OR_RETURN(requests::Filed filed, ctx_->requests->File({.who = who}, spec));
    RequestToProto(filed.row, resp->mutable_request());
    resp->set_merged(filed.merged);
    return Status::Ok();
  });
}

grpc::Status ClientService::ListWheelRequests(grpc::ServerContext* call,
                                              const farm::v1::ListWheelRequestsRequest* req,
                                              farm::v1::ListWheelRequestsResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_RETURN_IF_ERROR(NeedRequests(ctx_));
    std::optional<requests::State> state;
    if (!req->state().empty()) {
      state = requests::ParseState(req->state());
      if (!state) return Status::InvalidArgument("unknown request state " + req->state());
    }
    int limit = req->limit() <= 0 ? 100 : std::min(req->limit(), 1000);
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->requests->List(state, req->before_id(), limit));
    for (const store::RequestRow& r : rows) RequestToProto(r, resp->add_requests());
    return Status::Ok();
  });
}

grpc::Status ClientService::DecideWheelRequest(grpc::ServerContext* call,
                                               const farm::v1::DecideWheelRequestRequest* req,
                                               farm::v1::WheelRequest* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedRequests(ctx_));
    FARM_ASSIGN_OR_RETURN(store::RequestRow row,
                          req->approve() ? ctx_->requests->Approve(who, req->id())
                                         : ctx_->requests->Refuse(who, req->id(), req->reason()));
    RequestToProto(row, resp);
    return Status::Ok();
  });
}

}  // namespace farm::api
