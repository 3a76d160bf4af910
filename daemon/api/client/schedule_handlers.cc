// The schedule RPCs of FarmService: they translate, and builds::ScheduleControl holds the
// rules (who may change a schedule, quotas, the audit record), shared with the REST API.
// A run is submitted by builds::ScheduleSubmitter, so build keys, reuse and in-flight
// merging apply to scheduled builds exactly as to submitted ones, as the schedule's
// creator with the creator's role now (a creator whose tokens were all revoked no longer
// builds anything).
#include <algorithm>

#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/builds/schedule_control.h"
#include "daemon/cron/cron.h"

namespace farm::api {
namespace {

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

// The schedule use cases (builds::ScheduleControl), Unavailable where farmd made none.
Result<builds::ScheduleControl*> Schedules(const ServiceContext& ctx) {
  if (ctx.schedule_control == nullptr) return Status::Unavailable("this farmd runs no schedules");
  return ctx.schedule_control;
}

// PauseSchedule and ResumeSchedule.
grpc::Status SetPaused(ServiceContext* ctx, grpc::ServerContext* call,
                       const farm::v1::ScheduleRef& ref, bool paused, farm::v1::Schedule* resp) {
  return HandleChecked(ctx, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(builds::ScheduleControl * schedules, Schedules(*ctx));
    FARM_ASSIGN_OR_RETURN(int64_t id, ParseScheduleId(ref.schedule_id()));
    FARM_ASSIGN_OR_RETURN(store::ScheduleRow row, schedules->SetPaused(who, id, paused));
    FARM_ASSIGN_OR_RETURN(*resp, LoadSchedule(*ctx, row, 5));
    return Status::Ok();
  });
}

}  // namespace

grpc::Status ClientService::CreateSchedule(grpc::ServerContext* call,
                                           const farm::v1::CreateScheduleRequest* req,
                                           farm::v1::Schedule* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(builds::ScheduleControl * schedules, Schedules(*ctx_));
    FARM_ASSIGN_OR_RETURN(store::ScheduleRow row, schedules->Create(who, *req));
    FARM_ASSIGN_OR_RETURN(*resp, LoadSchedule(*ctx_, row, 0));
    return Status::Ok();
  });
}

grpc::Status ClientService::UpdateSchedule(grpc::ServerContext* call,
                                           const farm::v1::UpdateScheduleRequest* req,
                                           farm::v1::Schedule* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(builds::ScheduleControl * schedules, Schedules(*ctx_));
    FARM_ASSIGN_OR_RETURN(int64_t id, ParseScheduleId(req->schedule_id()));
    FARM_ASSIGN_OR_RETURN(store::ScheduleRow row, schedules->Update(who, id, req->build()));
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
  return SetPaused(ctx_, call, *req, true, resp);
}

grpc::Status ClientService::ResumeSchedule(grpc::ServerContext* call,
                                           const farm::v1::ScheduleRef* req,
                                           farm::v1::Schedule* resp) {
  return SetPaused(ctx_, call, *req, false, resp);
}

grpc::Status ClientService::DeleteSchedule(grpc::ServerContext* call,
                                           const farm::v1::ScheduleRef* req,
                                           farm::v1::DeleteScheduleResponse*) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(builds::ScheduleControl * schedules, Schedules(*ctx_));
    FARM_ASSIGN_OR_RETURN(int64_t id, ParseScheduleId(req->schedule_id()));
    return schedules->Delete(who, id);
  });
}

grpc::Status ClientService::RunScheduleNow(grpc::ServerContext* call,
                                           const farm::v1::RunScheduleNowRequest* req,
                                           farm::v1::ScheduleRun* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(builds::ScheduleControl * schedules, Schedules(*ctx_));
    FARM_ASSIGN_OR_RETURN(int64_t id, ParseScheduleId(req->schedule_id()));
    FARM_ASSIGN_OR_RETURN(store::ScheduleRunRow run, schedules->RunNow(who, id, req->force()));
    auto runs = ctx_->store->ListScheduleRuns(id, 1);  // with the build's state
    *resp =
        RunToProto(runs.ok() && !runs->empty() && runs->front().id == run.id ? runs->front() : run);
    return Status::Ok();
  });
}

}  // namespace farm::api
