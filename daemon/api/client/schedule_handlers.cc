// The schedule RPCs of FarmService, and the submitter the schedule runner uses to turn a
// firing into an ordinary build (SubmitLinked, so builds keys, reuse and in-flight merging
// apply to scheduled builds exactly as to submitted ones). A schedule's creator owns it:
// only the creator or an admin may pause, resume, delete or run it, and its builds are
// submitted as the creator, with the creator's role now (a creator whose tokens were all
// revoked no longer builds anything).
#include <algorithm>

#include "common/log.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/auth/ownership.h"
#include "daemon/builds/build_key.h"
#include "daemon/cron/cron.h"
#include "daemon/cron/new_schedule.h"
#include "daemon/cron/runner.h"

namespace farm::api {
namespace {

class ApiBuildSubmitter final : public cron::BuildSubmitter {
 public:
  explicit ApiBuildSubmitter(ServiceContext* ctx) : ctx_(ctx) {}
  Result<int64_t> SubmitScheduled(const farm::v1::SubmitBuildRequest& req, const std::string& who,
                                  store::ScheduleRunRow* run, int64_t next_fire_ms) override {
    store::BuildLinks links{.run = *run, .next_fire_ms = next_fire_ms};
    // A schedule builds as its creator, with the creator's role and within the creator's
    // quotas (a refusal is recorded as the run's failure).
    FARM_ASSIGN_OR_RETURN(Principal creator, ctx_->auth->PrincipalNamed(who));
    FARM_ASSIGN_OR_RETURN(int64_t id, SubmitLinked(*ctx_, req, creator, &links));
    *run = *links.run;
    return id;
  }
  std::string InputsDigest(const farm::v1::SubmitBuildRequest& req) const override {
    return builds::ScheduleInputsDigest(req);
  }

 private:
  ServiceContext* ctx_;
};

farm::v1::ScheduleRun RunToProto(const store::ScheduleRunRow& r) {
  farm::v1::ScheduleRun out;
  out.set_id(r.id);
  out.set_schedule_id(std::to_string(r.schedule_id));
  out.set_trigger(static_cast<farm::v1::ScheduleTrigger>(r.trigger));
  out.set_outcome(static_cast<farm::v1::ScheduleRunOutcome>(r.outcome));
  out.set_fire_time(FormatRfc3339(r.fire_ms));
  out.set_created_at(FormatRfc3339(r.created_ms));
  out.set_build_id(r.build_id);
  out.set_build_state(static_cast<farm::v1::BuildState>(r.build_state));
  out.set_resolved_commit(r.resolved_commit);
  out.set_inputs_digest(r.inputs_digest);
  out.set_detail(r.detail);
  if (r.upstream_ms > 0) out.set_upstream_time(FormatRfc3339(r.upstream_ms));
  return out;
}

Result<farm::v1::Schedule> LoadSchedule(const ServiceContext& ctx, const store::ScheduleRow& row,
                                        int runs) {
  farm::v1::Schedule s;
  s.set_id(std::to_string(row.id));
  s.set_name(row.name);
  s.set_recipe_name(row.recipe_name);
  s.mutable_request()->ParseFromString(row.request);
  s.set_cron(row.cron);
  s.set_time_zone(row.time_zone);
  s.set_missed_run_policy(static_cast<farm::v1::MissedRunPolicy>(row.missed_policy));
  s.set_concurrency_policy(static_cast<farm::v1::ConcurrencyPolicy>(row.concurrency_policy));
  s.set_paused(row.paused);
  if (!row.paused) {
    s.set_next_fire_time(FormatRfc3339(row.next_fire_ms));
    auto zone = cron::TimeZone::Load(row.time_zone);
    if (zone.ok()) s.set_next_fire_local(zone->FormatLocal(row.next_fire_ms / 1000));
  }
  s.set_created_by(row.created_by);
  s.set_owner(row.created_by);
  s.set_created_at(FormatRfc3339(row.created_ms));
  if (!row.watch.empty()) {
    s.mutable_watch()->ParseFromString(row.watch);
    s.set_watch_status(cron::DescribeWatchState(cron::WatchState::Parse(row.watch_state)));
  }
  FARM_ASSIGN_OR_RETURN(auto recent, ctx.store->ListScheduleRuns(row.id, runs));
  for (const auto& r : recent) *s.add_recent_runs() = RunToProto(r);
  return s;
}

Result<int64_t> ParseScheduleId(const std::string& id) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(id, &used);
    if (used == id.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument("schedule id must be a positive number, got \"" + id + "\"");
}

// The id of the schedule `id` names, when `who` may change it (auth::MayChangeSchedule).
Result<int64_t> OwnedScheduleId(const ServiceContext& ctx, const Principal& who,
                                const std::string& id) {
  FARM_ASSIGN_OR_RETURN(int64_t parsed, ParseScheduleId(id));
  FARM_RETURN_IF_ERROR(auth::MayChangeSchedule(*ctx.store, who, parsed));
  return parsed;
}

audit::Entry ScheduleEntry(audit::Action action, const farm::v1::ScheduleRef& ref) {
  return {action, "schedule " + ref.schedule_id(), ""};
}

Status NeedRunner(const ServiceContext& ctx) {
  return ctx.schedules ? Status::Ok() : Status::Unavailable("this farmd runs no schedules");
}

}  // namespace

std::unique_ptr<cron::BuildSubmitter> MakeScheduleSubmitter(ServiceContext* ctx) {
  return std::make_unique<ApiBuildSubmitter>(ctx);
}

grpc::Status ClientService::CreateSchedule(grpc::ServerContext* call,
                                           const farm::v1::CreateScheduleRequest* req,
                                           farm::v1::Schedule* resp) {
  audit::Entry entry{audit::Action::kScheduleCreate, "schedule " + req->name()};
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(TakeSubmission(*ctx_, who));
    FARM_ASSIGN_OR_RETURN(
        store::ScheduleRow row,
        cron::NewScheduleRow(*req, who.name, ctx_->clock->NowUnixMs(), ctx_->watches));
    entry.target = "recipe " + row.recipe_name;
    farm::v1::Source source = req->build().source();
    FARM_RETURN_IF_ERROR(CheckBuildSource(*ctx_, &source).status());
    FARM_RETURN_IF_ERROR(auth::MayUseName(*ctx_->store, who, row.recipe_name));
    FARM_RETURN_IF_ERROR(
        auth::ClaimName(*ctx_->store, who, row.recipe_name, ctx_->clock->NowUnixMs()));
    FARM_RETURN_IF_ERROR(ctx_->store->InsertSchedule(&row));
    entry.done = "schedule " + std::to_string(row.id);
    log::Info("schedule " + std::to_string(row.id) + " (" + row.name + ", " +
              (row.watch.empty() ? "\"" + row.cron + "\" " + row.time_zone : "an upstream watch") +
              ") created by " + who.name);
    FARM_ASSIGN_OR_RETURN(*resp, LoadSchedule(*ctx_, row, 0));
    return Status::Ok();
  });
}

grpc::Status ClientService::UpdateSchedule(grpc::ServerContext* call,
                                           const farm::v1::UpdateScheduleRequest* req,
                                           farm::v1::Schedule* resp) {
  audit::Entry entry{audit::Action::kScheduleUpdate, "schedule " + req->schedule_id()};
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(int64_t id, OwnedScheduleId(*ctx_, who, req->schedule_id()));
    FARM_ASSIGN_OR_RETURN(store::ScheduleRow old, ctx_->store->GetSchedule(id));
    FARM_ASSIGN_OR_RETURN(
        store::ScheduleRow row,
        cron::UpdatedScheduleRow(old, req->build(), ctx_->clock->NowUnixMs(), ctx_->watches));
    farm::v1::Source source = req->build().source();
    FARM_RETURN_IF_ERROR(CheckBuildSource(*ctx_, &source).status());
    FARM_RETURN_IF_ERROR(ctx_->store->SetScheduleRequest(id, row.request, row.source_sha256));
    log::Info("schedule " + req->schedule_id() + " updated by " + who.name);
    FARM_ASSIGN_OR_RETURN(row, ctx_->store->GetSchedule(id));
    FARM_ASSIGN_OR_RETURN(*resp, LoadSchedule(*ctx_, row, 5));
    return Status::Ok();
  });
}

grpc::Status ClientService::ListSchedules(grpc::ServerContext* call,
                                          const farm::v1::ListSchedulesRequest* req,
                                          farm::v1::ListSchedulesResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    int runs = req->runs() <= 0 ? 5 : std::min(req->runs(), 200);
    std::vector<store::ScheduleRow> rows;
    if (!req->schedule_id().empty()) {
      FARM_ASSIGN_OR_RETURN(int64_t id, ParseScheduleId(req->schedule_id()));
      FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetSchedule(id));
      rows.push_back(std::move(row));
    } else {
      FARM_ASSIGN_OR_RETURN(rows, ctx_->store->ListSchedules());
    }
    for (const auto& row : rows) {
      FARM_ASSIGN_OR_RETURN(*resp->add_schedules(), LoadSchedule(*ctx_, row, runs));
    }
    return Status::Ok();
  });
}

grpc::Status ClientService::PauseSchedule(grpc::ServerContext* call,
                                          const farm::v1::ScheduleRef* req,
                                          farm::v1::Schedule* resp) {
  audit::Entry entry = ScheduleEntry(audit::Action::kSchedulePause, *req);
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(int64_t id, OwnedScheduleId(*ctx_, who, req->schedule_id()));
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetSchedule(id));
    FARM_RETURN_IF_ERROR(ctx_->store->SetSchedulePaused(id, true, row.next_fire_ms));
    log::Info("schedule " + req->schedule_id() + " paused by " + who.name);
    FARM_ASSIGN_OR_RETURN(row, ctx_->store->GetSchedule(id));
    FARM_ASSIGN_OR_RETURN(*resp, LoadSchedule(*ctx_, row, 5));
    return Status::Ok();
  });
}

grpc::Status ClientService::ResumeSchedule(grpc::ServerContext* call,
                                           const farm::v1::ScheduleRef* req,
                                           farm::v1::Schedule* resp) {
  audit::Entry entry = ScheduleEntry(audit::Action::kScheduleResume, *req);
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(int64_t id, OwnedScheduleId(*ctx_, who, req->schedule_id()));
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetSchedule(id));
    // Fire times that passed while paused are not "missed": the next one is from now.
    FARM_ASSIGN_OR_RETURN(int64_t next, cron::ResumeFireMs(row, ctx_->clock->NowUnixMs()));
    FARM_RETURN_IF_ERROR(ctx_->store->SetSchedulePaused(id, false, next));
    log::Info("schedule " + req->schedule_id() + " resumed by " + who.name);
    FARM_ASSIGN_OR_RETURN(row, ctx_->store->GetSchedule(id));
    FARM_ASSIGN_OR_RETURN(*resp, LoadSchedule(*ctx_, row, 5));
    return Status::Ok();
  });
}

grpc::Status ClientService::DeleteSchedule(grpc::ServerContext* call,
                                           const farm::v1::ScheduleRef* req,
                                           farm::v1::DeleteScheduleResponse*) {
  audit::Entry entry = ScheduleEntry(audit::Action::kScheduleDelete, *req);
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(int64_t id, OwnedScheduleId(*ctx_, who, req->schedule_id()));
    FARM_RETURN_IF_ERROR(ctx_->store->DeleteSchedule(id, ctx_->clock->NowUnixMs()));
    log::Info("schedule " + req->schedule_id() + " deleted by " + who.name);
    return Status::Ok();
  });
}

grpc::Status ClientService::RunScheduleNow(grpc::ServerContext* call,
                                           const farm::v1::RunScheduleNowRequest* req,
                                           farm::v1::ScheduleRun* resp) {
  audit::Entry entry{audit::Action::kScheduleRun, "schedule " + req->schedule_id()};
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedRunner(*ctx_));
    FARM_ASSIGN_OR_RETURN(int64_t id, OwnedScheduleId(*ctx_, who, req->schedule_id()));
    FARM_RETURN_IF_ERROR(TakeSubmission(*ctx_, who));
    log::Info("schedule " + req->schedule_id() + " run now by " + who.name);
    FARM_ASSIGN_OR_RETURN(auto run, ctx_->schedules->RunNow(id, req->force()));
    entry.done =
        "run " + std::to_string(run.id) + " " +
        farm::v1::ScheduleRunOutcome_Name(static_cast<farm::v1::ScheduleRunOutcome>(run.outcome)) +
        (run.build_id > 0 ? ", build " + std::to_string(run.build_id) : ": " + run.detail);
    auto runs = ctx_->store->ListScheduleRuns(id, 1);  // with the build's state
    *resp =
        RunToProto(runs.ok() && !runs->empty() && runs->front().id == run.id ? runs->front() : run);
    return Status::Ok();
  });
}

}  // namespace farm::api
