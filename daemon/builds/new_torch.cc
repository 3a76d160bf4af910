#include "daemon/builds/new_torch.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/log.h"
#include "common/recipe/cell_environment.h"
#include "common/recipe/recipe.h"
#include "common/upstream/release_version.h"
#include "daemon/model/convert.h"
#include "daemon/sched/revalidation.h"

namespace farm::builds {
namespace {

using model::ParseBlob;

// How far back the newest succeeded build of a recipe is looked for.
constexpr int kBuildsRead = 50;

bool FloorAdmits(const std::string& floor, const upstream::ReleaseVersion& v) {
  auto f = upstream::ParseReleaseVersion(floor);
  return f && upstream::CompareReleases(v, *f) >= 0;
}

}  // namespace

std::vector<NewTorch> NewTorchesOf(const std::vector<cron::WatchItem>& items) {
  std::vector<NewTorch> out;
  for (const cron::WatchItem& item : items) {
    // "torch cu130 2.12.0"
    if (!item.key.starts_with("torch ") || item.version.empty()) continue;
    size_t space = item.key.find(' ', 6);
    if (space == std::string::npos) continue;
    std::string variant = item.key.substr(6, space - 6);
    // A release candidate ("torch test-cu130 2.12.0") is built, never proven: its final
    // release is (CheckWatch keeps candidates off stable-ABI recipes).
    if (recipe::IsPrereleaseIndex(variant)) continue;
    out.push_back({item.version, std::move(variant)});
  }
  return out;
}

std::vector<farm::v1::MatrixCell> NewTorchCells(const farm::v1::Recipe& recipe,
                                                const store::JobRow& job, const NewTorch& torch) {
  std::vector<farm::v1::MatrixCell> out;
  auto v = upstream::ParseReleaseVersion(torch.version);
  if (!v || recipe.torch_abi().stable_floor().empty() ||
      !FloorAdmits(recipe.torch_abi().stable_floor(), *v)) {
    return out;
  }
  auto built = ParseBlob<farm::v1::MatrixCell>(job.cell);
  if (recipe::TorchVariant(built.cuda()) != torch.variant) return out;
  const std::string minor = v->Minor();
  auto needs = ParseBlob<farm::v1::JobNeeds>(job.needs);
  std::set<std::string> seen;
  for (const farm::v1::MatrixCell& c : needs.validate_in()) {
    if (c.torch() == minor) return {};  // the build was proven with it
    farm::v1::MatrixCell cell = c;
    cell.set_torch(minor);
    if (seen.insert(recipe::ValidateCellKey(cell) + "/" + cell.arch_list()).second) {
      out.push_back(std::move(cell));
    }
  }
  return out;
}

farm::v1::Recipe WithTorchRelease(farm::v1::Recipe recipe, const std::string& version) {
  auto v = upstream::ParseReleaseVersion(version);
  if (v && recipe.has_environment()) {
    (*recipe.mutable_environment()->mutable_torch())[v->Minor()] = v->Public();
  }
  return recipe;
}

Result<std::vector<std::pair<store::JobRow, farm::v1::Recipe>>> NewTorchProver::Wheels(
    const std::string& name) {
  std::vector<std::pair<store::JobRow, farm::v1::Recipe>> out;
  store::BuildFilter filter{.recipe_name = name, .state = store::kBuildSucceeded};
  FARM_ASSIGN_OR_RETURN(auto builds, store_->ListBuildsMatching(filter, 0, kBuildsRead));
  if (builds.empty()) return out;
  FARM_ASSIGN_OR_RETURN(auto jobs, store_->ListJobs(builds.front().id));
  std::set<int64_t> targets;
  for (store::JobRow job : jobs) {
    if (job.kind != store::kJobBuild || job.state != store::kJobSucceeded) continue;
    if (ParseBlob<farm::v1::JobNeeds>(job.needs).validate_in_size() == 0) continue;
    if (job.reused_from > 0) {
      FARM_ASSIGN_OR_RETURN(job, store_->GetJob(job.reused_from));
    }
    if (!targets.insert(job.id).second) continue;
    FARM_ASSIGN_OR_RETURN(store::BuildRow build, store_->GetBuild(job.build_id));
    out.emplace_back(std::move(job), ParseBlob<farm::v1::Recipe>(build.recipe));
  }
  return out;
}

Status NewTorchProver::Queue(const store::JobRow& job, const farm::v1::Recipe& recipe,
                             const NewTorch& torch, const farm::v1::MatrixCell& cell,
                             Outcome* out) {
  FARM_ASSIGN_OR_RETURN(
      store::JobRow row,
      sched::ValidationJobFor(*store_, job, job.attempt, clock_->NowUnixMs(), max_attempts_));
  row.cell = cell.SerializeAsString();
  auto needs = ParseBlob<farm::v1::JobNeeds>(row.needs);
  needs.set_new_torch(torch.version);
  needs.clear_lock_digest();
  if (recipe.has_environment()) {
    // The release's environment, resolved as a cell's: the same lock a build of it gets.
    if (locker_ == nullptr) {
      return Status::FailedPrecondition("this farmd resolves no environment locks yet");
    }
    FARM_ASSIGN_OR_RETURN(
        farm::v1::ProvisionSpec spec,
        recipe::ValidationEnvironment(WithTorchRelease(recipe, torch.version), cell));
    FARM_ASSIGN_OR_RETURN(std::vector<locks::CellLock> locked, locker_->LockAll({spec}));
    needs.set_lock_digest(locked[0].digest);
  }
  row.needs = needs.SerializeAsString();
  FARM_ASSIGN_OR_RETURN(
      store::QueuedProof queued,
      store_->QueueNewTorchProof(row, recipe::ValidateCellKey(cell), torch.version));
  out->job_ids.push_back(queued.job.id);
  if (queued.queued) {
    ++out->queued;
    log::Info("queued validation job " + std::to_string(queued.job.id) + ": job " +
              std::to_string(job.id) + "'s wheels with torch " + torch.version + " (" +
              torch.variant + "), no rebuild");
  }
  return Status::Ok();
}

Result<cron::TorchProver::Outcome> NewTorchProver::ProveNewTorches(
    const farm::v1::SubmitBuildRequest& req, const std::vector<cron::WatchItem>& items) {
  Outcome out;
  std::vector<NewTorch> torches = NewTorchesOf(items);
  if (torches.empty()) return out;
  std::string path = req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path();
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe asked, recipe::ParseRecipe(req.recipe_yaml(), path));
  if (asked.torch_abi().stable_floor().empty()) return out;  // per-torch wheels: the watch builds
  FARM_ASSIGN_OR_RETURN(auto wheels, Wheels(asked.name()));
  out.covers_all = !wheels.empty();
  for (const NewTorch& torch : torches) {
    bool proven = false;
    for (const auto& [job, recipe] : wheels) {
      for (const farm::v1::MatrixCell& cell : NewTorchCells(recipe, job, torch)) {
        FARM_RETURN_IF_ERROR(Queue(job, recipe, torch, cell, &out));
        proven = true;
      }
    }
    out.covers_all = out.covers_all && proven;
  }
  return out;
}

}  // namespace farm::builds
