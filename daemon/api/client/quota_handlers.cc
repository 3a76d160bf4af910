// The quota RPCs of FarmService: a principal's limits and usage (daemon/quota/), and an
// admin's override of them.
#include "common/log.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/quota/quota.h"

namespace farm::api {
namespace {

Status NeedQuotas(const ServiceContext& ctx) {
  return ctx.quotas ? Status::Ok() : Status::Unavailable("this farmd keeps no quotas");
}

farm::v1::QuotaLimits LimitsToProto(int64_t submissions, int64_t queued_jobs,
                                    int64_t stored_bytes) {
  farm::v1::QuotaLimits l;
  l.set_submissions(submissions);
  l.set_queued_jobs(queued_jobs);
  l.set_stored_bytes(stored_bytes);
  return l;
}

Result<farm::v1::Quota> LoadQuota(const ServiceContext& ctx, const std::string& principal,
                                  const std::string& role) {
  FARM_ASSIGN_OR_RETURN(quota::QuotaView view, ctx.quotas->View(principal, role));
  farm::v1::Quota q;
  q.set_principal(principal);
  q.set_role(role);
  const quota::Limits& l = view.limits;
  *q.mutable_limits() = LimitsToProto(l.submissions, l.queued_jobs, l.stored_bytes);
  if (view.override_row) {
    const store::QuotaOverrideRow& o = *view.override_row;
    *q.mutable_admin_override() = LimitsToProto(o.submissions, o.queued_jobs, o.stored_bytes);
  }
  q.set_window_seconds(ctx.quotas->policy().window_ms / 1000);
  q.set_queued_jobs(view.usage.queued_jobs);
  q.set_stored_bytes(view.usage.stored_bytes);
  q.set_submissions_left(view.submissions_left);
  return q;
}

// The role whose defaults apply to `principal`: the caller's own, else its tokens'.
Result<std::string> RoleFor(const ServiceContext& ctx, const Principal& who,
                            const std::string& principal) {
  if (principal == who.name) return who.role;
  return ctx.quotas->RoleOf(principal);
}

Status CheckLimit(int64_t v, const char* name) {
  if (v >= store::kQuotaRoleDefault) return Status::Ok();
  return Status::InvalidArgument(std::string("quota ") + name +
                                 " must be a limit (>= 0), -1 (none) or -2 (the role's default)");
}

}  // namespace

grpc::Status ClientService::GetQuota(grpc::ServerContext* call,
                                     const farm::v1::GetQuotaRequest* req, farm::v1::Quota* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedQuotas(*ctx_));
    const std::string principal = req->principal().empty() ? who.name : req->principal();
    if (principal != who.name && who.role != "admin") {
      return Status::PermissionDenied("only an admin may read another principal's quota");
    }
    FARM_ASSIGN_OR_RETURN(std::string role, RoleFor(*ctx_, who, principal));
    FARM_ASSIGN_OR_RETURN(*resp, LoadQuota(*ctx_, principal, role));
    return Status::Ok();
  });
}

grpc::Status ClientService::SetQuota(grpc::ServerContext* call,
                                     const farm::v1::SetQuotaRequest* req, farm::v1::Quota* resp) {
  return Handle(ctx_, call, Need::kAdmin, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedQuotas(*ctx_));
    if (req->principal().empty() || req->principal().size() > 200) {
      return Status::InvalidArgument("name the principal (a token name) whose quota to set");
    }
    const farm::v1::QuotaLimits& l = req->limits();
    FARM_RETURN_IF_ERROR(CheckLimit(l.submissions(), "submissions"));
    FARM_RETURN_IF_ERROR(CheckLimit(l.queued_jobs(), "queued-jobs"));
    FARM_RETURN_IF_ERROR(CheckLimit(l.stored_bytes(), "stored-bytes"));
    FARM_RETURN_IF_ERROR(
        ctx_->quotas->SetOverride(store::QuotaOverrideRow{.principal = req->principal(),
                                                          .submissions = l.submissions(),
                                                          .queued_jobs = l.queued_jobs(),
                                                          .stored_bytes = l.stored_bytes(),
                                                          .updated_by = who.name,
                                                          .updated_ms = ctx_->clock->NowUnixMs()}));
    log::Info("quota of \"" + req->principal() + "\" set by " + who.name + ": submissions " +
              std::to_string(l.submissions()) + ", queued jobs " + std::to_string(l.queued_jobs()) +
              ", stored bytes " + std::to_string(l.stored_bytes()) +
              " (-1 none, -2 the role's default)");
    FARM_ASSIGN_OR_RETURN(std::string role, RoleFor(*ctx_, who, req->principal()));
    FARM_ASSIGN_OR_RETURN(*resp, LoadQuota(*ctx_, req->principal(), role));
    return Status::Ok();
  });
}

}  // namespace farm::api
