// The coverage RPC of FarmService: the cells of every package and version with their
// states (daemon/coverage/, docs/coverage.md), what /api/v1/coverage answers too.
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/coverage/coverage.h"

namespace farm::api {

grpc::Status ClientService::GetCoverage(grpc::ServerContext* call,
                                        const farm::v1::GetCoverageRequest* req,
                                        farm::v1::Coverage* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(
        auto filter, coverage::MakeFilter(req->package(), req->torch(), req->cuda(), req->python(),
                                          req->arch(), req->state()));
    FARM_ASSIGN_OR_RETURN(auto builds, coverage::ReadRecentBuilds(*ctx_->store, filter.package,
                                                                  coverage::kMaxCoverageBuilds));
    for (const coverage::Cell& c : coverage::ComputeCoverage(builds)) {
      if (filter.Matches(c)) *resp->add_cells() = coverage::CellProto(c);
    }
    resp->set_builds_read(static_cast<int32_t>(builds.size()));
    return Status::Ok();
  });
}

}  // namespace farm::api
