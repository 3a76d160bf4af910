#include "daemon/cron/new_schedule.h"

#include "common/recipe/recipe.h"
#include "daemon/cron/runner.h"

namespace farm::cron {

namespace {

// The first fire time of the schedule: the cron's next, or now for a watch.
Result<int64_t> FirstFireMs(const farm::v1::CreateScheduleRequest& req,
                            const farm::v1::SubmitBuildRequest& build, const std::string& zone,
                            int64_t now_ms, const WatchSettings& watches) {
  if (!req.has_watch()) {
    auto next = NextFireMs(req.cron(), zone, now_ms);
    if (!next.ok()) return next.status().WithContext("cron \"" + req.cron() + "\" in " + zone);
    return next;
  }
  if (!req.cron().empty()) {
    return Status::InvalidArgument("a schedule fires on a cron expression or a watch, not both");
  }
  FARM_ASSIGN_OR_RETURN(WatchTarget target, WatchTargetOf(build));
  FARM_RETURN_IF_ERROR(
      CheckWatch(req.watch(), target, watches.upstreams, watches.min_poll_seconds));
  return now_ms;
}

}  // namespace

Result<store::ScheduleRow> NewScheduleRow(const farm::v1::CreateScheduleRequest& req,
                                          const std::string& who, int64_t now_ms,
                                          const WatchSettings& watches) {
  farm::v1::SubmitBuildRequest build = req.build();
  std::string path = build.recipe_path().empty() ? "recipe.yaml" : build.recipe_path();
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, recipe::ParseRecipe(build.recipe_yaml(), path));
  FARM_RETURN_IF_ERROR(recipe::AttachPatches(&recipe, build.patches()));
  FARM_RETURN_IF_ERROR(recipe::AttachValidationScript(&recipe, build.validation_script()));
  FARM_RETURN_IF_ERROR(recipe::AttachEnvironmentLock(&recipe, build.environment_lock()));
  // The runner resolves the source it finds in the request: take the recipe's when the
  // client sent none.
  if (build.source().kind_case() == farm::v1::Source::KIND_NOT_SET) {
    *build.mutable_source() = recipe.source();
  }
  FARM_RETURN_IF_ERROR(recipe::CheckSourceIsContent(build.source()));
  std::string zone = req.time_zone().empty() ? "UTC" : req.time_zone();
  FARM_ASSIGN_OR_RETURN(int64_t next, FirstFireMs(req, build, zone, now_ms, watches));
  return store::ScheduleRow{
      .name = req.name().empty() ? recipe.name() : req.name(),
      .recipe_name = recipe.name(),
      .request = build.SerializeAsString(),
      .cron = req.cron(),
      .time_zone = zone,
      .missed_policy = req.missed_run_policy() == farm::v1::MISSED_RUN_ONCE ? 2 : 1,
      .concurrency_policy = req.concurrency_policy() == farm::v1::CONCURRENCY_ALLOW ? 2 : 1,
      .paused = req.paused(),
      .next_fire_ms = next,
      .created_by = who,
      .created_ms = now_ms,
      .source_sha256 = build.source().archive().sha256(),
      .watch = req.has_watch() ? req.watch().SerializeAsString() : ""};
}

Result<store::ScheduleRow> UpdatedScheduleRow(const store::ScheduleRow& old,
                                              const farm::v1::SubmitBuildRequest& build,
                                              int64_t now_ms, const WatchSettings& watches) {
  farm::v1::CreateScheduleRequest req;
  req.set_name(old.name);
  *req.mutable_build() = build;
  req.set_cron(old.cron);
  req.set_time_zone(old.time_zone);
  req.set_missed_run_policy(old.missed_policy == 2 ? farm::v1::MISSED_RUN_ONCE
                                                   : farm::v1::MISSED_SKIP);
  req.set_concurrency_policy(old.concurrency_policy == 2 ? farm::v1::CONCURRENCY_ALLOW
                                                         : farm::v1::CONCURRENCY_SKIP);
  req.set_paused(old.paused);
  if (!old.watch.empty() && !req.mutable_watch()->ParseFromString(old.watch)) {
    return Status::DataLoss("schedule " + std::to_string(old.id) + " is unreadable");
  }
  FARM_ASSIGN_OR_RETURN(store::ScheduleRow checked,
                        NewScheduleRow(req, old.created_by, now_ms, watches));
  if (checked.recipe_name != old.recipe_name) {
    return Status::InvalidArgument("schedule " + std::to_string(old.id) + " builds recipe \"" +
                                   old.recipe_name + "\", not \"" + checked.recipe_name +
                                   "\": add a schedule for another recipe");
  }
  store::ScheduleRow row = old;
  row.request = checked.request;
  row.source_sha256 = checked.source_sha256;
  return row;
}

Result<int64_t> ResumeFireMs(const store::ScheduleRow& row, int64_t now_ms) {
  if (!row.watch.empty()) return now_ms;
  return NextFireMs(row.cron, row.time_zone, now_ms);
}

}  // namespace farm::cron
