#include "daemon/builds/plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "common/arch.h"
#include "common/recipe/build_plan.h"
#include "common/recipe/cell_environment.h"
#include "common/recipe/cell_settings.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/recipe/wheel_names.h"
#include "common/wheel/identity.h"
#include "daemon/builds/build_key.h"
#include "daemon/cron/torch_follow.h"
#include "daemon/locks/env_locker.h"

namespace farm::builds {
namespace {

constexpr int kMaxGraphDepth = 8;

// Recipe GB (GiB, as MAX_JOBS and placement count them) to the store's MiB.
int64_t Mib(double gb) { return static_cast<int64_t>(std::llround(gb * 1024)); }

std::string RecipePath(const farm::v1::SubmitBuildRequest& req) {
  return req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path();
}

Result<farm::v1::Recipe> PrepareRecipe(const farm::v1::SubmitBuildRequest& req) {
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe,
                        recipe::ParseRecipe(req.recipe_yaml(), RecipePath(req)));
  FARM_RETURN_IF_ERROR(recipe::AttachPatches(&recipe, req.patches()));
  FARM_RETURN_IF_ERROR(recipe::AttachValidationScript(&recipe, req.validation_script()));
  FARM_RETURN_IF_ERROR(recipe::AttachEnvironmentLock(&recipe, req.environment_lock()));
  if (req.has_source() && req.source().kind_case() != farm::v1::Source::KIND_NOT_SET) {
    *recipe.mutable_source() = req.source();
  }
  return recipe;
}

// Checks a git source's URL against the farm's policy (whether it came in the recipe or
// in the request), and sets the commit of one that names only a branch or tag, so the key
// (and the worker) use exactly the commit the ref points to now.
Status ResolveSource(const PlanDeps& deps, farm::v1::Recipe* recipe) {
  if (!recipe->source().has_git()) return Status::Ok();
  farm::v1::GitSource* git = recipe->mutable_source()->mutable_git();
  FARM_RETURN_IF_ERROR(git::CheckGitUrl(git->url(), deps.git).WithContext("source.git.url"));
  if (!git->commit().empty() || git->ref().empty() || deps.resolver == nullptr) {
    return Status::Ok();
  }
  auto commit = deps.resolver->ResolveGitRef(git->url(), git->ref());
  if (!commit.ok()) {
    return Status::FailedPrecondition("cannot resolve " + git->ref() + " of " + git->url() + ": " +
                                      commit.status().message());
  }
  git->set_commit(commit.value());
  return Status::Ok();
}

// The torch releases index `index` lists, into `out` under the variant of CUDA `cuda`
// (nothing when it has no torch).
Status ListIndexReleases(const PlanDeps& deps, const std::string& cuda, const std::string& index,
                         cron::Releases* out) {
  auto url = deps.watches.upstreams.indexes.find(index);
  if (url == deps.watches.upstreams.indexes.end() || deps.upstream_fetcher == nullptr) {
    return Status::FailedPrecondition("matrix.torch follows the index " + index + " of CUDA " +
                                      cuda + ", and this farmd has no --upstream-index " + index);
  }
  auto listed = cron::ListTorchReleases(*deps.upstream_fetcher, url->second);
  if (!listed.ok() && listed.status().code() != StatusCode::kNotFound) {
    return Status::Unavailable("cannot read torch's releases on " + index + ": " +
                               listed.status().message());
  }
  if (listed.ok()) (*out)[cron::CudaVariantName(cuda)] = std::move(*listed);
  return Status::Ok();
}

// Resolves a torch axis that follows the index (cron/torch_follow.h) against the indexes
// farmd knows, so the stored recipe names the releases this build uses; a request that
// follows release candidates reads each CUDA's pre-release index too.
Status FollowTorch(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                   farm::v1::Recipe* recipe) {
  if (!recipe->matrix().has_torch_follow() || !req.matrix().torch().empty()) return Status::Ok();
  const auto& axis = req.matrix().cuda().empty() ? recipe->matrix().cuda() : req.matrix().cuda();
  std::vector<std::string> cuda(axis.begin(), axis.end());
  cron::Releases releases, candidates;
  for (const std::string& c : cuda) {
    std::string variant = cron::CudaVariantName(c);
    FARM_RETURN_IF_ERROR(ListIndexReleases(deps, c, variant, &releases));
    if (req.follow_release_candidates()) {
      FARM_RETURN_IF_ERROR(
          ListIndexReleases(deps, c, recipe::PrereleaseIndex(variant), &candidates));
    }
  }
  return cron::ApplyTorchFollow(cuda, releases, candidates, recipe).WithContext("matrix.torch");
}

// The recipe's pins hold for the recipe the client sent as its requirement.
Status CheckPins(const farm::v1::Requirement& r, const farm::v1::Recipe& got) {
  if (!r.version().empty() && r.version() != got.version()) {
    return Status::InvalidArgument("the requirement " + r.recipe() + " asks for version " +
                                   r.version() + ", the recipe sent is " + got.name() + " " +
                                   got.version());
  }
  if (!r.commit().empty() &&
      (!got.source().has_git() || !got.source().git().commit().starts_with(r.commit()))) {
    return Status::InvalidArgument(
        "the requirement " + r.recipe() + " asks for commit " + r.commit() +
        ", the recipe sent builds " +
        (got.source().has_git() ? got.source().git().commit() : std::string("no git commit")));
  }
  return Status::Ok();
}

// The recipe of `req`, checked, with its source checked and resolved and a followed torch
// axis pinned; the stored build row's source_sha256 in `source_sha`.
Result<farm::v1::Recipe> CheckedRecipe(const PlanDeps& deps,
                                       const farm::v1::SubmitBuildRequest& req,
                                       std::string* source_sha) {
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, PrepareRecipe(req));
  FARM_ASSIGN_OR_RETURN(*source_sha, CheckBuildSource(deps.sources, recipe.mutable_source()));
  FARM_RETURN_IF_ERROR(ResolveSource(deps, &recipe));
  FARM_RETURN_IF_ERROR(FollowTorch(deps, req, &recipe));
  recipe::MarkTorchCandidates(&recipe);
  if (req.requirements_size() != recipe.requirements_size()) {
    return Status::InvalidArgument(
        recipe.name() + " requires " + std::to_string(recipe.requirements_size()) +
        " recipe(s) and the request carries " + std::to_string(req.requirements_size()) +
        " (the client reads required recipes; farmctl submit does)");
  }
  return recipe;
}

// The builds of the requested matrix, each with a wheel name of its own (a stable-ABI
// group's cells share one wheel); the cells refused, one line each, in `rejected`.
Result<recipe::BuildPlan> PlanCells(const farm::v1::Recipe& recipe,
                                    const farm::v1::SubmitBuildRequest& req,
                                    std::string* rejected) {
  recipe::MatrixExpansion expansion = recipe::ExpandRecipe(req.matrix(), recipe);
  FARM_RETURN_IF_ERROR(recipe::CheckBuildable(expansion));
  std::ostringstream lines;
  for (const auto& r : expansion.rejected) lines << r << "\n";
  *rejected = lines.str();
  // One job per planned build: a cell each, or with torch_abi.stable one per group of
  // cells, built once and validated in each cell of its group (common/recipe/build_plan.h).
  recipe::BuildPlan builds = recipe::PlanExpansion(expansion, recipe);
  FARM_RETURN_IF_ERROR(builds.status);
  std::vector<farm::v1::MatrixCell> build_cells;
  for (const recipe::PlannedBuild& planned : builds.builds) build_cells.push_back(planned.build);
  FARM_RETURN_IF_ERROR(recipe::CheckWheelNames(recipe, build_cells, RecipePath(req),
                                               req.matrix().arch_lists_size() > 0));
  return builds;
}

// What the job of each planned build needs of its worker, and, for a recipe with an
// environment, the lock of each cell it builds or is validated in (locks::LockJobs: one
// resolution per distinct environment, before any key is made).
Result<std::vector<farm::v1::JobNeeds>> PlanNeeds(const PlanDeps& deps,
                                                  const farm::v1::Recipe& recipe,
                                                  std::vector<recipe::PlannedBuild>& planned) {
  std::vector<farm::v1::MatrixCell> cells;
  std::vector<farm::v1::JobNeeds> all_needs;
  for (recipe::PlannedBuild& p : planned) {
    farm::v1::JobNeeds needs;
    needs.set_target_gpu(recipe.build_on_target_gpu());
    needs.set_provisioned(recipe.has_environment());
    needs.set_no_toolkit(recipe.has_environment() && recipe.environment().no_toolkit());
    if (!recipe.torch_abi().stable_floor().empty()) {
      for (farm::v1::MatrixCell& c : p.validate) *needs.add_validate_in() = std::move(c);
    }
    cells.push_back(p.build);
    all_needs.push_back(std::move(needs));
  }
  if (recipe.has_environment()) {
    if (deps.locker == nullptr) {
      return Status::FailedPrecondition("this farmd resolves no environments (no resolver)");
    }
    FARM_RETURN_IF_ERROR(locks::LockJobs(*deps.locker, recipe, cells, &all_needs));
  }
  return all_needs;
}

// The job of one planned build in `cell` with `needs`, its key set and, unless `force`,
// the succeeded job with that key that answers it.
Result<store::JobRow> PlanJob(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                              const farm::v1::Recipe& recipe, const std::string& source_id,
                              const farm::v1::MatrixCell& cell, const farm::v1::JobNeeds& needs,
                              int64_t now) {
  const bool any_need = needs.target_gpu() || needs.provisioned() || needs.validate_in_size() > 0;
  store::JobRow job{.cell = cell.SerializeAsString(),
                    .priority = req.priority(),
                    .build_key = BuildKey({.recipe = recipe,
                                           .source = source_id,
                                           .cell = cell,
                                           .validate_in = needs.validate_in(),
                                           .lock_digest = &needs.lock_digest(),
                                           .validate_locks = &needs.validate_locks()}),
                    .max_attempts = recipe.retry().max_attempts() > 0
                                        ? recipe.retry().max_attempts()
                                        : deps.max_attempts,
                    .created_ms = now,
                    .needs = any_need ? needs.SerializeAsString() : "",
                    .compile_mib = Mib(recipe.gb_per_compile_job()),
                    .validation_mib = Mib(recipe.validation().gpu_memory_gb())};
  job.release_candidate = wheel::IsTorchCandidate(recipe, cell.torch());
  if (recipe.requirements_size() > 0) {
    // The key waits for the wheels the job will consume (KeyWithInputs).
    job.key_base = job.build_key;
    job.build_key.clear();
  } else if (!req.force() && !job.build_key.empty()) {
    // Only succeeded jobs with artifacts answer: a failed result is never reused.
    FARM_ASSIGN_OR_RETURN(auto prior, deps.builds->FindSucceededJob(job.build_key));
    if (prior) job.reused_from = prior->id;
  }
  return job;
}

Result<BuildDraft> PlanAt(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                          const std::string& who, int depth);

// Plans the recipes `draft` requires, as its request carries them.
Status PlanRequirements(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                        const std::string& who, int depth, BuildDraft* draft) {
  const farm::v1::Recipe& recipe = draft->recipe;
  for (int i = 0; i < req.requirements_size(); ++i) {
    farm::v1::SubmitBuildRequest sub = req.requirements(i);
    sub.set_priority(req.priority());
    sub.set_force(false);  // --force rebuilds the requested recipe, not what it consumes
    sub.clear_matrix();
    auto planned = PlanAt(deps, sub, who, depth + 1);
    if (!planned.ok()) {
      return planned.status().WithContext(recipe.name() + " requires " +
                                          recipe.requirements(i).recipe());
    }
    FARM_RETURN_IF_ERROR(CheckPins(recipe.requirements(i), planned->recipe));
    draft->requirements.push_back(std::move(planned).value());
  }
  return Status::Ok();
}

Result<BuildDraft> PlanAt(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                          const std::string& who, int depth) {
  if (depth > kMaxGraphDepth) {
    return Status::InvalidArgument("requirements nest deeper than " +
                                   std::to_string(kMaxGraphDepth));
  }
  BuildDraft draft;
  std::string source_sha, rejected;
  FARM_ASSIGN_OR_RETURN(draft.recipe, CheckedRecipe(deps, req, &source_sha));
  const farm::v1::Recipe& recipe = draft.recipe;
  FARM_ASSIGN_OR_RETURN(recipe::BuildPlan builds, PlanCells(recipe, req, &rejected));
  int64_t now = deps.clock->NowUnixMs();
  draft.build = store::BuildRow{.recipe_name = recipe.name(),
                                .recipe = recipe.SerializeAsString(),
                                .priority = req.priority(),
                                .submitted_by = who,
                                .rejected_cells = rejected,
                                .created_ms = now,
                                .source_sha256 = source_sha};
  std::string source_id = SourceIdentity(recipe.source(), req.source_digest());
  FARM_ASSIGN_OR_RETURN(std::vector<farm::v1::JobNeeds> needs,
                        PlanNeeds(deps, recipe, builds.builds));
  for (size_t n = 0; n < builds.builds.size(); ++n) {
    FARM_ASSIGN_OR_RETURN(store::JobRow job, PlanJob(deps, req, recipe, source_id,
                                                     builds.builds[n].build, needs[n], now));
    draft.jobs.push_back(std::move(job));
    draft.cells.push_back(std::move(builds.builds[n].build));
  }
  FARM_RETURN_IF_ERROR(PlanRequirements(deps, req, who, depth, &draft));
  return draft;
}

// The cell of a required recipe that serves `cell`: the same platform, Python, CUDA and
// torch (an axis the required recipe leaves empty serves every value), and an arch list
// that covers the cell's.
std::optional<size_t> ServingCell(const std::vector<farm::v1::MatrixCell>& candidates,
                                  const farm::v1::MatrixCell& cell) {
  auto same = [](const std::string& theirs, const std::string& ours) {
    return theirs.empty() || theirs == ours;
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const farm::v1::MatrixCell& c = candidates[i];
    if (!same(c.platform(), cell.platform()) || !same(c.python(), cell.python()) ||
        !same(c.cuda(), cell.cuda()) || !same(c.torch(), cell.torch())) {
      continue;
    }
    if (c.arch_list().empty()) return i;
    auto theirs = arch::ParseArchList(c.arch_list());
    auto ours = arch::ParseArchList(cell.arch_list());
    if (!theirs.ok() || !ours.ok()) continue;
    bool covers = true;
    for (const auto& target : *ours) {
      covers &= std::find(theirs->begin(), theirs->end(), target) != theirs->end();
    }
    if (covers) return i;
  }
  return std::nullopt;
}

// The index of the job of `required` that serves each job of `draft`, marking it used.
Result<std::vector<size_t>> ChooseServing(const BuildDraft& draft, const BuildDraft& required,
                                          std::vector<bool>* used) {
  std::vector<size_t> chosen;
  for (const auto& cell : draft.cells) {
    std::optional<size_t> i = ServingCell(required.cells, cell);
    if (!i) {
      return Status::InvalidArgument(draft.recipe.name() + " (" + recipe::DescribeCell(cell) +
                                     ") requires " + required.recipe.name() +
                                     ", which has no cell with the same platform, Python, CUDA and "
                                     "torch and an arch list covering " +
                                     cell.arch_list());
    }
    (*used)[*i] = true;
    chosen.push_back(*i);
  }
  return chosen;
}

}  // namespace

Result<BuildDraft> PlanBuild(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                             const std::string& who) {
  return PlanAt(deps, req, who, 0);
}

Status MatchCells(BuildDraft* draft) {
  draft->required_index.assign(draft->requirements.size(), {});
  for (size_t r = 0; r < draft->requirements.size(); ++r) {
    BuildDraft& req = draft->requirements[r];
    std::vector<bool> used(req.jobs.size(), false);
    FARM_ASSIGN_OR_RETURN(std::vector<size_t> chosen, ChooseServing(*draft, req, &used));
    // Drop the required cells nobody consumes; renumber the chosen ones.
    std::vector<size_t> renumber(req.jobs.size(), 0);
    BuildDraft kept = std::move(req);
    req = BuildDraft{
        .recipe = kept.recipe, .build = kept.build, .requirements = std::move(kept.requirements)};
    for (size_t i = 0; i < kept.jobs.size(); ++i) {
      if (!used[i]) continue;
      renumber[i] = req.jobs.size();
      req.cells.push_back(kept.cells[i]);
      req.jobs.push_back(kept.jobs[i]);
    }
    for (size_t& i : chosen) i = renumber[i];
    draft->required_index[r] = std::move(chosen);
    FARM_RETURN_IF_ERROR(MatchCells(&req));
  }
  return Status::Ok();
}

}  // namespace farm::builds
