#include "daemon/builds/schedule_control.h"

#include "common/log.h"
#include "daemon/auth/ownership.h"
#include "daemon/builds/audited.h"
#include "daemon/cron/cron.h"

namespace farm::builds {
namespace {

std::string Named(int64_t id) { return "schedule " + std::to_string(id); }

}  // namespace

Result<store::ScheduleRow> ScheduleControl::Create(const Principal& who,
                                                   const farm::v1::CreateScheduleRequest& req) {
  audit::Entry entry{audit::Action::kScheduleCreate, "schedule " + req.name()};
  return AuditedAs(
      deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Result<store::ScheduleRow> {
        FARM_RETURN_IF_ERROR(deps_.submitter->TakeSubmission(who));
        const int64_t now = deps_.clock->NowUnixMs();
        FARM_ASSIGN_OR_RETURN(store::ScheduleRow row,
                              cron::NewScheduleRow(req, who.name, now, deps_.watches));
        entry.target = "recipe " + row.recipe_name;
        farm::v1::Source source = req.build().source();
        FARM_RETURN_IF_ERROR(CheckBuildSource(deps_.sources, &source).status());
        FARM_RETURN_IF_ERROR(auth::MayUseName(*deps_.names, who, row.recipe_name));
        FARM_RETURN_IF_ERROR(auth::ClaimName(*deps_.names, who, row.recipe_name, now));
        FARM_RETURN_IF_ERROR(deps_.schedules->InsertSchedule(&row));
        entry.done = Named(row.id);
        log::Info(
            Named(row.id) + " (" + row.name + ", " +
            (row.watch.empty() ? "\"" + row.cron + "\" " + row.time_zone : "an upstream watch") +
            ") created by " + who.name);
        return row;
      });
}

Result<store::ScheduleRow> ScheduleControl::Update(const Principal& who, int64_t id,
                                                   const farm::v1::SubmitBuildRequest& build) {
  audit::Entry entry{audit::Action::kScheduleUpdate, Named(id)};
  return AuditedAs(
      deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Result<store::ScheduleRow> {
        FARM_RETURN_IF_ERROR(auth::MayChangeSchedule(*deps_.schedules, who, id));
        FARM_ASSIGN_OR_RETURN(store::ScheduleRow old, deps_.schedules->GetSchedule(id));
        FARM_ASSIGN_OR_RETURN(
            store::ScheduleRow row,
            cron::UpdatedScheduleRow(old, build, deps_.clock->NowUnixMs(), deps_.watches));
        farm::v1::Source source = build.source();
        FARM_RETURN_IF_ERROR(CheckBuildSource(deps_.sources, &source).status());
        FARM_RETURN_IF_ERROR(
            deps_.schedules->SetScheduleRequest(id, row.request, row.source_sha256));
        log::Info(Named(id) + " updated by " + who.name);
        return deps_.schedules->GetSchedule(id);
      });
}

Result<store::ScheduleRow> ScheduleControl::SetPaused(const Principal& who, int64_t id,
                                                      bool paused) {
  audit::Entry entry{paused ? audit::Action::kSchedulePause : audit::Action::kScheduleResume,
                     Named(id)};
  return AuditedAs(
      deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Result<store::ScheduleRow> {
        FARM_RETURN_IF_ERROR(auth::MayChangeSchedule(*deps_.schedules, who, id));
        FARM_ASSIGN_OR_RETURN(store::ScheduleRow row, deps_.schedules->GetSchedule(id));
        int64_t next = row.next_fire_ms;
        if (!paused) {
          FARM_ASSIGN_OR_RETURN(next, cron::ResumeFireMs(row, deps_.clock->NowUnixMs()));
        }
        FARM_RETURN_IF_ERROR(deps_.schedules->SetSchedulePaused(id, paused, next));
        log::Info(Named(id) + (paused ? " paused by " : " resumed by ") + who.name);
        return deps_.schedules->GetSchedule(id);
      });
}

Status ScheduleControl::Delete(const Principal& who, int64_t id) {
  audit::Entry entry{audit::Action::kScheduleDelete, Named(id)};
  return AuditedAs(deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Status {
    FARM_RETURN_IF_ERROR(auth::MayChangeSchedule(*deps_.schedules, who, id));
    FARM_RETURN_IF_ERROR(deps_.schedules->DeleteSchedule(id, deps_.clock->NowUnixMs()));
    log::Info(Named(id) + " deleted by " + who.name);
    return Status::Ok();
  });
}

Result<store::ScheduleRunRow> ScheduleControl::RunNow(const Principal& who, int64_t id,
                                                      bool force) {
  audit::Entry entry{audit::Action::kScheduleRun, Named(id)};
  return AuditedAs(
      deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Result<store::ScheduleRunRow> {
        FARM_RETURN_IF_ERROR(auth::MayChangeSchedule(*deps_.schedules, who, id));
        if (deps_.runner == nullptr) return Status::Unavailable("this farmd runs no schedules");
        FARM_RETURN_IF_ERROR(deps_.submitter->TakeSubmission(who));
        log::Info(Named(id) + " run now by " + who.name);
        FARM_ASSIGN_OR_RETURN(store::ScheduleRunRow run, deps_.runner->RunNow(id, force));
        entry.done =
            "run " + std::to_string(run.id) + " " +
            farm::v1::ScheduleRunOutcome_Name(
                static_cast<farm::v1::ScheduleRunOutcome>(run.outcome)) +
            (run.build_id > 0 ? ", build " + std::to_string(run.build_id) : ": " + run.detail);
        return run;
      });
}

}  // namespace farm::builds
