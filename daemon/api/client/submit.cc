// SubmitBuild: parse and validate the recipe, resolve a git branch to its commit, expand
// the matrix, reuse succeeded jobs with the same build key, merge jobs whose key is already
// in flight onto that job, store the build. Nothing is stored when any check fails.
//
// Build keys (docs/schedules.md#build-keys): daemon/builds/build_key.h.
//
// Stable ABI (docs/recipes.md, "Torch ABI"): a recipe with torch_abi.stable is planned by
// recipe::PlanExpansion, one job per planned build, in its build cell, carrying the cells
// its wheel is validated in (JobNeeds.validate_in, part of its key); the validation jobs of
// the other cells are queued when it succeeds (fanout.h). Other recipes: a job per cell.
//
// Graphs (docs/recipes.md, "Requirements"): the request carries the recipes the recipe requires,
// read by the client. Every recipe of the graph is planned and checked first; then the
// required builds are stored (answered from stored wheels or merged onto identical jobs in
// flight like any build, keeping only the cells some job consumes), then the requested
// build with each job held on the jobs it requires. A held job's key is its key above
// combined with the sha256 of the wheels it consumes (builds::KeyWithInputs), set when they
// exist. A crash between storing the required builds and the requested one leaves the
// required builds to finish alone; submitting again reuses them.
//
// Names (docs/security.md, "Who may change what"): every build stored, the requested one and
// each required one, is under a recipe name the principal may use: one nobody owns yet
// (it then claims it), one it owns, or any when it is an admin. The names are checked
// after every other check and before anything is stored; a refusal stores nothing.
#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "common/arch.h"
#include "common/log.h"
#include "common/recipe/build_plan.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/recipe/wheel_names.h"
#include "daemon/api/client/client_service.h"
#include "daemon/auth/ownership.h"
#include "daemon/builds/build_key.h"
#include "daemon/cron/source_resolver.h"
#include "daemon/cron/torch_follow.h"
#include "daemon/locks/env_locker.h"
#include "daemon/model/convert.h"
#include "daemon/quota/quota.h"

namespace farm::api {

namespace {

// Recipe GB (GiB, as MAX_JOBS and placement count them) to the store's MiB.
int64_t Mib(double gb) { return static_cast<int64_t>(std::llround(gb * 1024)); }

Result<farm::v1::Recipe> PrepareRecipe(const farm::v1::SubmitBuildRequest& req) {
  std::string name = req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path();
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, recipe::ParseRecipe(req.recipe_yaml(), name));
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
Status ResolveSource(const ServiceContext& ctx, farm::v1::Recipe* recipe) {
  if (!recipe->source().has_git()) return Status::Ok();
  farm::v1::GitSource* git = recipe->mutable_source()->mutable_git();
  FARM_RETURN_IF_ERROR(git::CheckGitUrl(git->url(), ctx.git).WithContext("source.git.url"));
  if (!git->commit().empty() || git->ref().empty() || ctx.resolver == nullptr) {
    return Status::Ok();
  }
  auto commit = ctx.resolver->ResolveGitRef(git->url(), git->ref());
  if (!commit.ok()) {
    return Status::FailedPrecondition("cannot resolve " + git->ref() + " of " + git->url() + ": " +
                                      commit.status().message());
  }
  git->set_commit(commit.value());
  return Status::Ok();
}

// Resolves a torch axis that follows the index (cron/torch_follow.h) against the indexes
// farmd knows, so the stored recipe names the releases this build uses.
Status FollowTorch(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                   farm::v1::Recipe* recipe) {
  if (!recipe->matrix().has_torch_follow() || !req.matrix().torch().empty()) return Status::Ok();
  const auto& axis = req.matrix().cuda().empty() ? recipe->matrix().cuda() : req.matrix().cuda();
  std::vector<std::string> cuda(axis.begin(), axis.end());
  std::map<std::string, std::vector<upstream::ReleaseVersion>> releases;
  for (const std::string& c : cuda) {
    std::string variant = cron::CudaVariantName(c);
    auto index = ctx.watches.upstreams.indexes.find(variant);
    if (index == ctx.watches.upstreams.indexes.end() || ctx.upstream_fetcher == nullptr) {
      return Status::FailedPrecondition("matrix.torch follows the index of CUDA " + c +
                                        ", and this farmd has no --upstream-index " + variant);
    }
    auto listed = cron::ListTorchReleases(*ctx.upstream_fetcher, index->second);
    if (!listed.ok() && listed.status().code() != StatusCode::kNotFound) {
      return Status::Unavailable("cannot read torch's releases on " + variant + ": " +
                                 listed.status().message());
    }
    if (listed.ok()) releases[variant] = std::move(*listed);
  }
  return cron::ApplyTorchFollow(cuda, releases, recipe).WithContext("matrix.torch");
}

// A build planned but not stored: the checked recipe, its cells and jobs (keys set, reuse
// looked up), and the planned builds of the recipes it requires.
struct PlannedBuild {
  farm::v1::Recipe recipe;
  store::BuildRow build;
  std::vector<farm::v1::MatrixCell> cells;
  std::vector<store::JobRow> jobs;
  std::vector<PlannedBuild> requirements;  // in recipe.requirements() order
  // For each requirement, the index of the required job of each of this build's jobs.
  std::vector<std::vector<size_t>> required_index;
};

constexpr int kMaxGraphDepth = 8;

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

Result<PlannedBuild> PlanBuild(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                               const std::string& who, int depth) {
  if (depth > kMaxGraphDepth) {
    return Status::InvalidArgument("requirements nest deeper than " +
                                   std::to_string(kMaxGraphDepth));
  }
  PlannedBuild plan;
  FARM_ASSIGN_OR_RETURN(plan.recipe, PrepareRecipe(req));
  farm::v1::Recipe& recipe = plan.recipe;
  FARM_ASSIGN_OR_RETURN(std::string source_sha, CheckBuildSource(ctx, recipe.mutable_source()));
  FARM_RETURN_IF_ERROR(ResolveSource(ctx, &recipe));
  FARM_RETURN_IF_ERROR(FollowTorch(ctx, req, &recipe));
  if (req.requirements_size() != recipe.requirements_size()) {
    return Status::InvalidArgument(
        recipe.name() + " requires " + std::to_string(recipe.requirements_size()) +
        " recipe(s) and the request carries " + std::to_string(req.requirements_size()) +
        " (the client reads required recipes; farmctl submit does)");
  }
  recipe::MatrixExpansion expansion = recipe::ExpandRequest(req.matrix(), recipe.matrix());
  FARM_RETURN_IF_ERROR(recipe::CheckBuildable(expansion));
  std::ostringstream rejected;
  for (const auto& r : expansion.rejected) rejected << r << "\n";
  // One job per planned build: a cell each, or with torch_abi.stable one per group of
  // cells, built once and validated in each cell of its group (common/recipe/build_plan.h).
  recipe::BuildPlan builds = recipe::PlanExpansion(expansion, recipe);
  FARM_RETURN_IF_ERROR(builds.status);
  // Each build's wheel needs a name of its own (a stable-ABI group's cells share one wheel).
  std::vector<farm::v1::MatrixCell> build_cells;
  for (const recipe::PlannedBuild& planned : builds.builds) build_cells.push_back(planned.build);
  FARM_RETURN_IF_ERROR(recipe::CheckWheelNames(
      recipe, build_cells, req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path(),
      req.matrix().arch_lists_size() > 0));
  int64_t now = ctx.clock->NowUnixMs();
  plan.build = store::BuildRow{.recipe_name = recipe.name(),
                               .recipe = recipe.SerializeAsString(),
                               .priority = req.priority(),
                               .submitted_by = who,
                               .rejected_cells = rejected.str(),
                               .created_ms = now,
                               .source_sha256 = source_sha};
  std::string source_id = builds::SourceIdentity(recipe.source(), req.source_digest());
  const bool stable = !recipe.torch_abi().stable_floor().empty();
  std::vector<farm::v1::MatrixCell> cells;
  std::vector<farm::v1::JobNeeds> all_needs;
  for (recipe::PlannedBuild& planned : builds.builds) {
    farm::v1::JobNeeds needs;
    needs.set_target_gpu(recipe.build_on_target_gpu());
    needs.set_provisioned(recipe.has_environment());
    needs.set_no_toolkit(recipe.has_environment() && recipe.environment().no_toolkit());
    if (stable) {
      for (farm::v1::MatrixCell& c : planned.validate) *needs.add_validate_in() = std::move(c);
    }
    cells.push_back(planned.build);
    all_needs.push_back(std::move(needs));
  }
  // Every provisioned cell's lock, resolved now (one resolution per distinct environment).
  if (recipe.has_environment()) {
    if (ctx.locker == nullptr) {
      return Status::FailedPrecondition("this farmd resolves no environments (no resolver)");
    }
    FARM_RETURN_IF_ERROR(locks::LockJobs(*ctx.locker, recipe, cells, &all_needs));
  }
  for (size_t n = 0; n < builds.builds.size(); ++n) {
    recipe::PlannedBuild& planned = builds.builds[n];
    const farm::v1::MatrixCell& cell = planned.build;
    const farm::v1::JobNeeds& needs = all_needs[n];
    const bool any_need = needs.target_gpu() || needs.provisioned() || needs.validate_in_size() > 0;
    store::JobRow job{.cell = cell.SerializeAsString(),
                      .priority = req.priority(),
                      .build_key = builds::BuildKey({.recipe = recipe,
                                                     .source = source_id,
                                                     .cell = cell,
                                                     .validate_in = needs.validate_in(),
                                                     .lock_digest = &needs.lock_digest(),
                                                     .validate_locks = &needs.validate_locks()}),
                      .max_attempts = recipe.retry().max_attempts() > 0
                                          ? recipe.retry().max_attempts()
                                          : ctx.tunables.max_attempts,
                      .created_ms = now,
                      .needs = any_need ? needs.SerializeAsString() : "",
                      .compile_mib = Mib(recipe.gb_per_compile_job()),
                      .validation_mib = Mib(recipe.validation().gpu_memory_gb())};
    if (recipe.requirements_size() > 0) {
      // The key waits for the wheels the job will consume (ResolveHeldJobs).
      job.key_base = job.build_key;
      job.build_key.clear();
    } else if (!req.force() && !job.build_key.empty()) {
      // Only succeeded jobs with artifacts answer: a failed result is never reused.
      FARM_ASSIGN_OR_RETURN(auto prior, ctx.store->FindSucceededJob(job.build_key));
      if (prior) job.reused_from = prior->id;
    }
    plan.jobs.push_back(std::move(job));
    plan.cells.push_back(std::move(planned.build));
  }
  for (int i = 0; i < req.requirements_size(); ++i) {
    farm::v1::SubmitBuildRequest sub = req.requirements(i);
    sub.set_priority(req.priority());
    sub.set_force(false);  // --force rebuilds the requested recipe, not what it consumes
    sub.clear_matrix();
    auto planned = PlanBuild(ctx, sub, who, depth + 1);
    if (!planned.ok()) {
      return planned.status().WithContext(recipe.name() + " requires " +
                                          recipe.requirements(i).recipe());
    }
    FARM_RETURN_IF_ERROR(CheckPins(recipe.requirements(i), planned->recipe));
    plan.requirements.push_back(std::move(planned).value());
  }
  return plan;
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

// Matches every job of `plan` to a job of each required build, and keeps in the required
// builds only the jobs some job needs (recursively).
Status MatchCells(PlannedBuild* plan) {
  plan->required_index.assign(plan->requirements.size(), {});
  for (size_t r = 0; r < plan->requirements.size(); ++r) {
    PlannedBuild& req = plan->requirements[r];
    std::vector<bool> used(req.jobs.size(), false);
    std::vector<size_t> chosen;
    for (const auto& cell : plan->cells) {
      std::optional<size_t> i = ServingCell(req.cells, cell);
      if (!i) {
        return Status::InvalidArgument(
            plan->recipe.name() + " (" + recipe::DescribeCell(cell) + ") requires " +
            req.recipe.name() +
            ", which has no cell with the same platform, Python, CUDA and "
            "torch and an arch list covering " +
            cell.arch_list());
      }
      used[*i] = true;
      chosen.push_back(*i);
    }
    // Drop the required cells nobody consumes; renumber the chosen ones.
    std::vector<size_t> renumber(req.jobs.size(), 0);
    PlannedBuild kept = std::move(req);
    req = PlannedBuild{
        .recipe = kept.recipe, .build = kept.build, .requirements = std::move(kept.requirements)};
    for (size_t i = 0; i < kept.jobs.size(); ++i) {
      if (!used[i]) continue;
      renumber[i] = req.jobs.size();
      req.cells.push_back(kept.cells[i]);
      req.jobs.push_back(kept.jobs[i]);
    }
    for (size_t& i : chosen) i = renumber[i];
    plan->required_index[r] = std::move(chosen);
    FARM_RETURN_IF_ERROR(MatchCells(&req));
  }
  return Status::Ok();
}

// Stores the required builds first (depth first), then `plan` with its jobs held on theirs.
Status StorePlan(const ServiceContext& ctx, PlannedBuild* plan, store::BuildLinks* links,
                 bool force) {
  for (PlannedBuild& req : plan->requirements) {
    store::BuildLinks sub_links{.merge_in_flight = true};
    FARM_RETURN_IF_ERROR(StorePlan(ctx, &req, &sub_links, false));
  }
  links->force = force;
  links->inputs_key = builds::KeyWithInputs;
  for (size_t r = 0; r < plan->requirements.size(); ++r) {
    const PlannedBuild& req = plan->requirements[r];
    const farm::v1::Requirement& spec = plan->recipe.requirements(static_cast<int>(r));
    for (size_t j = 0; j < plan->jobs.size(); ++j) {
      links->requirements.push_back({.index = j,
                                     .required_job_id = req.jobs[plan->required_index[r][j]].id,
                                     .recipe_name = req.recipe.name(),
                                     .for_build = spec.for_build(),
                                     .for_validation = spec.for_validation()});
    }
  }
  FARM_RETURN_IF_ERROR(ctx.store->CreateBuildLinked(&plan->build, &plan->jobs, links));
  int reused = 0, merged = 0, held = 0;
  for (const auto& j : plan->jobs) {
    reused += j.reused_from > 0, merged += j.not_before_ms > 0, held += !plan->requirements.empty();
  }
  log::Info("build " + std::to_string(plan->build.id) + " of " + plan->recipe.name() +
            " submitted by " + plan->build.submitted_by + " with " +
            std::to_string(plan->jobs.size()) + " job(s), " + std::to_string(reused) +
            " answered from stored wheels, " + std::to_string(merged) +
            " waiting on identical jobs in flight" +
            (held > 0 ? ", " + std::to_string(held) + " waiting for the wheels they require" : ""));
  return Status::Ok();
}

// What storing `plan` adds to its submitter's usage: the jobs it queues (not those
// answered from stored wheels) and its recipes' bytes, the required builds' included.
void AddUsage(const PlannedBuild& plan, int64_t* jobs, int64_t* bytes) {
  for (const auto& j : plan.jobs) *jobs += j.reused_from == 0;
  *bytes += static_cast<int64_t>(plan.build.recipe.size());
  for (const auto& r : plan.requirements) AddUsage(r, jobs, bytes);
}

// Whether `who` may build under each name of the graph (reads only), or, with `claim`,
// claims the names nobody owns for `who` (refused when another principal claimed one
// meanwhile).
Status CheckNames(const ServiceContext& ctx, const Principal& who, const PlannedBuild& plan,
                  bool claim) {
  const std::string& name = plan.recipe.name();
  Status s = claim ? auth::ClaimName(*ctx.store, who, name, ctx.clock->NowUnixMs())
                   : auth::MayUseName(*ctx.store, who, name);
  FARM_RETURN_IF_ERROR(s);
  for (const PlannedBuild& required : plan.requirements) {
    Status r = CheckNames(ctx, who, required, claim);
    if (!r.ok()) return r.WithContext(name + " requires " + required.recipe.name());
  }
  return Status::Ok();
}

}  // namespace

Status TakeSubmission(const ServiceContext& ctx, const Principal& who) {
  return ctx.quotas ? ctx.quotas->TakeSubmission(who.name, who.role) : Status::Ok();
}

Result<int64_t> SubmitLinked(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                             const Principal& who, store::BuildLinks* links, audit::Entry* entry) {
  // Every recipe of the graph is checked before anything is stored.
  FARM_ASSIGN_OR_RETURN(PlannedBuild plan, PlanBuild(ctx, req, who.name, 0));
  if (entry != nullptr) entry->target = "recipe " + plan.recipe.name();
  FARM_RETURN_IF_ERROR(MatchCells(&plan));
  FARM_RETURN_IF_ERROR(CheckNames(ctx, who, plan, /*claim=*/false));
  // The quota check and the store hold the principal's lock, so that two submissions of
  // one principal are not both let in on the same usage. Names are claimed only once the
  // build is admitted, so that a refused build claims nothing.
  std::unique_lock<std::mutex> admitted;
  if (ctx.quotas) {
    int64_t jobs = 0, bytes = 0;
    AddUsage(plan, &jobs, &bytes);
    FARM_ASSIGN_OR_RETURN(admitted, ctx.quotas->Admit(who.name, who.role, jobs, bytes));
  }
  FARM_RETURN_IF_ERROR(CheckNames(ctx, who, plan, /*claim=*/true));
  // A forced build is built even when an identical one is in flight.
  links->merge_in_flight = !req.force();
  FARM_RETURN_IF_ERROR(StorePlan(ctx, &plan, links, req.force()));
  if (entry != nullptr) entry->done = "build " + std::to_string(plan.build.id);
  return plan.build.id;
}

Result<farm::v1::Build> Submit(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                               const Principal& who, audit::Entry* entry) {
  // Taken first, so that a flood of submissions is refused before any recipe is read.
  FARM_RETURN_IF_ERROR(TakeSubmission(ctx, who));
  store::BuildLinks links;
  FARM_ASSIGN_OR_RETURN(int64_t id, SubmitLinked(ctx, req, who, &links, entry));
  return LoadBuild(ctx, id);
}

}  // namespace farm::api
