#include "daemon/auth/ownership.h"

#include <optional>

namespace farm::auth {
namespace {

Status NameRefused(const std::string& name, const std::string& owner) {
  return Status::PermissionDenied("recipe name \"" + name + "\" belongs to " + owner + ": only " +
                                  owner +
                                  " or an admin may build under it (an admin can transfer "
                                  "it: farmctl names transfer)");
}

// `what` (of build `build_id`) is changed by running its recipe again: the build's owner
// may, while it may still build under the recipe's name.
Status MayRunAgain(store::BuildReader& builds, store::RecipeNameStore& names, const Principal& who,
                   int64_t build_id, const std::string& what) {
  FARM_ASSIGN_OR_RETURN(store::BuildRow build, builds.GetBuild(build_id));
  FARM_RETURN_IF_ERROR(
      MayChange(who, build.submitted_by, what + " (build " + std::to_string(build_id) + ")"));
  return MayUseName(names, who, build.recipe_name);
}

}  // namespace

bool IsAdmin(const Principal& who) { return who.role == "admin"; }

Status MayChange(const Principal& who, const std::string& owner, const std::string& what) {
  if (IsAdmin(who) || (!who.name.empty() && who.name == owner)) return Status::Ok();
  return Status::PermissionDenied(what + " belongs to " + (owner.empty() ? "nobody" : owner) +
                                  ": only its owner or an admin may change it");
}

Status MayChangeBuild(store::BuildReader& builds, const Principal& who, int64_t build_id) {
  FARM_ASSIGN_OR_RETURN(store::BuildRow build, builds.GetBuild(build_id));
  return MayChange(who, build.submitted_by, "build " + std::to_string(build_id));
}

Status MayChangeJob(store::BuildReader& builds, store::RecipeNameStore& names, const Principal& who,
                    int64_t job_id) {
  FARM_ASSIGN_OR_RETURN(store::JobRow job, builds.GetJob(job_id));
  return MayRunAgain(builds, names, who, job.build_id, "job " + std::to_string(job_id));
}

Status MayChangeArtifact(store::ArtifactStore& artifacts, store::BuildReader& builds,
                         store::RecipeNameStore& names, const Principal& who, int64_t artifact_id) {
  FARM_ASSIGN_OR_RETURN(store::ArtifactRow artifact, artifacts.GetArtifact(artifact_id));
  FARM_ASSIGN_OR_RETURN(store::JobRow job, builds.GetJob(artifact.job_id));
  return MayRunAgain(builds, names, who, job.build_id, "artifact " + std::to_string(artifact_id));
}

Status MayChangeSchedule(store::ScheduleStore& schedules, const Principal& who,
                         int64_t schedule_id) {
  FARM_ASSIGN_OR_RETURN(store::ScheduleRow schedule, schedules.GetSchedule(schedule_id));
  return MayChange(who, schedule.created_by, "schedule " + std::to_string(schedule_id));
}

Status MayUseName(store::RecipeNameStore& names, const Principal& who, const std::string& name) {
  FARM_ASSIGN_OR_RETURN(auto row, names.GetRecipeName(name));
  if (!row || IsAdmin(who) || row->owner == who.name) return Status::Ok();
  return NameRefused(name, row->owner);
}

Status ClaimName(store::RecipeNameStore& names, const Principal& who, const std::string& name,
                 int64_t now_ms) {
  // A read first: most submissions reuse a name that is theirs, and a claim is a write.
  FARM_ASSIGN_OR_RETURN(std::optional<store::RecipeNameRow> row, names.GetRecipeName(name));
  if (!row) {
    FARM_ASSIGN_OR_RETURN(row, names.ClaimRecipeName(name, who.name, now_ms));
  }
  if (IsAdmin(who) || row->owner == who.name) return Status::Ok();
  return NameRefused(name, row->owner);
}

Result<store::ProjectNameRow> ClaimProject(store::Store& store, const Principal& submitter,
                                           const std::string& project, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(std::optional<store::ProjectNameRow> row, store.GetProjectName(project));
  if (!row) {
    FARM_ASSIGN_OR_RETURN(row, store.ClaimProjectName(project, submitter.name, now_ms));
  }
  if (IsAdmin(submitter) || row->owner == submitter.name) return *row;
  return Status::PermissionDenied(
      "project \"" + project + "\" belongs to " + row->owner + ": only " + row->owner +
      " or an admin may publish wheels of it (an admin can transfer it: farmctl projects "
      "transfer)");
}

}  // namespace farm::auth
