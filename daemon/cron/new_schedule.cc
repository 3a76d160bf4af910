#include "daemon/cron/new_schedule.h"

#include "common/recipe/recipe.h"
#include "daemon/cron/runner.h"

namespace farm::cron {

Result<store::ScheduleRow> NewScheduleRow(const farm::v1::CreateScheduleRequest& req,
                                          const std::string& who, int64_t now_ms) {
  farm::v1::SubmitBuildRequest build = req.build();
  std::string path = build.recipe_path().empty() ? "recipe.yaml" : build.recipe_path();
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, recipe::ParseRecipe(build.recipe_yaml(), path));
  FARM_RETURN_IF_ERROR(recipe::AttachPatches(&recipe, build.patches()));
  FARM_RETURN_IF_ERROR(recipe::AttachValidationScript(&recipe, build.validation_script()));
  // The runner resolves the source it finds in the request: take the recipe's when the
  // client sent none.
  if (build.source().kind_case() == farm::v1::Source::KIND_NOT_SET) {
    *build.mutable_source() = recipe.source();
  }
  FARM_RETURN_IF_ERROR(recipe::CheckSourceIsContent(build.source()));
  std::string zone = req.time_zone().empty() ? "UTC" : req.time_zone();
  auto next = NextFireMs(req.cron(), zone, now_ms);
  if (!next.ok()) return next.status().WithContext("cron \"" + req.cron() + "\" in " + zone);
  return store::ScheduleRow{
      .name = req.name().empty() ? recipe.name() : req.name(),
      .recipe_name = recipe.name(),
      .request = build.SerializeAsString(),
      .cron = req.cron(),
      .time_zone = zone,
      .missed_policy = req.missed_run_policy() == farm::v1::MISSED_RUN_ONCE ? 2 : 1,
      .concurrency_policy = req.concurrency_policy() == farm::v1::CONCURRENCY_ALLOW ? 2 : 1,
      .paused = req.paused(),
      .next_fire_ms = next.value(),
      .created_by = who,
      .created_ms = now_ms,
      .source_sha256 = build.source().archive().sha256()};
}

}  // namespace farm::cron
