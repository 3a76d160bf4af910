// PublishBuild and ListPublications: the outbox rows of a build, as the API shows them.
// The publisher loop (daemon/publish/outbox.h) does the work; these handlers only reset
// rows to pending and read them. Nothing here can carry a token: rows hold redacted
// errors and public URLs only.
#include "common/log.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/auth/ownership.h"
#include "daemon/model/convert.h"

namespace farm::api {
namespace {

template <typename Response>
Status AddPublications(const ServiceContext& ctx, int64_t build_id, Response* resp) {
  FARM_ASSIGN_OR_RETURN(auto rows, ctx.store->ListPublications(build_id));
  for (const auto& row : rows) *resp->add_publications() = model::PublicationToProto(row);
  return Status::Ok();
}

}  // namespace

grpc::Status ClientService::PublishBuild(grpc::ServerContext* call,
                                         const farm::v1::PublishBuildRequest* req,
                                         farm::v1::PublishBuildResponse* resp) {
  // Replacing remote files that differ overwrites published bytes: admins only.
  // Publishing another principal's build is changing it: its owner or an admin.
  Need need = req->replace() ? Need::kAdmin : Need::kSubmitter;
  audit::Entry entry{audit::Action::kBuildPublish, "build " + std::to_string(req->build_id())};
  return HandleMutation(ctx_, call, need, &entry, [&](const Principal& who) -> Status {
    const std::string& target = req->target();
    if (!target.empty() && target != "github" && target != "hf") {
      return Status::InvalidArgument("target must be github or hf, got \"" + target + "\"");
    }
    FARM_RETURN_IF_ERROR(auth::MayChangeBuild(*ctx_->store, who, req->build_id()));
    FARM_ASSIGN_OR_RETURN(int count,
                          ctx_->store->RequeuePublications(req->build_id(), target, req->replace(),
                                                           ctx_->clock->NowUnixMs()));
    if (count == 0) {
      return Status::FailedPrecondition(
          "build " + std::to_string(req->build_id()) + " has no " +
          (target.empty() ? std::string("") : target + " ") +
          "publications: its recipe's publish section names no repository for it, or no "
          "wheel of it is publishable yet (a succeeded job whose validation passed, or is "
          "pending hardware when farmd runs with --publish-pending-hardware)");
    }
    entry.done = std::to_string(count) + " publication(s) to " +
                 (target.empty() ? std::string("all targets") : target) +
                 (req->replace() ? ", replacing remote files" : "");
    log::Info("publishing of build " + std::to_string(req->build_id()) + " (" +
              (target.empty() ? "all targets" : target) + ") re-run by " + who.name +
              (req->replace() ? ", replacing remote files" : ""));
    return AddPublications(*ctx_, req->build_id(), resp);
  });
}

grpc::Status ClientService::ListPublications(grpc::ServerContext* call,
                                             const farm::v1::ListPublicationsRequest* req,
                                             farm::v1::ListPublicationsResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_RETURN_IF_ERROR(ctx_->store->GetBuild(req->build_id()).status());
    return AddPublications(*ctx_, req->build_id(), resp);
  });
}

}  // namespace farm::api
