// SubmitBuild: parse and validate the recipe, resolve a git branch to its commit, expand
// the matrix, reuse succeeded jobs with the same build key, merge jobs whose key is already
// in flight onto that job, store the build. Nothing is stored when any check fails.
//
// Build keys (docs/schedules.md#build-keys): a job's key hashes the recipe text, the
// patches, the source identity (git URL + resolved commit, or the sha256 of the uploaded
// source archive, which farmd checked itself) and the matrix cell. The cell is the toolchain fingerprint: placement only gives a job to
// a worker whose reported Python, torch and CUDA toolkit match the cell, so every wheel a
// key can name was built with a toolchain the cell allows. A key with an unknown source
// (an unresolved ref) is empty and never matches.
#include <cmath>
#include <sstream>

#include "common/log.h"
#include "common/sha256.h"
#include "daemon/api/client_service.h"
#include "daemon/model/convert.h"
#include "daemon/recipe/matrix.h"
#include "daemon/recipe/recipe.h"
#include "daemon/recipe/wheel_names.h"
#include "daemon/schedule/runner.h"
#include "daemon/schedule/source_resolver.h"

namespace farm::api {


namespace {

// Recipe GB (GiB, as MAX_JOBS and placement count them) to the store's MiB.
int64_t Mib(double gb) { return static_cast<int64_t>(std::llround(gb * 1024)); }

bool HasAxes(const farm::v1::MatrixAxes& m) {
  return m.python_size() || m.torch_size() || m.cuda_size() || m.arch_lists_size() ||
         m.platform_size() || m.include_size();
}

// The key of everything that determines a job's output that farmd knows at submit time.
// Empty when the source content is unknown, so such jobs are never answered from cache.
std::string BuildKey(const farm::v1::Recipe& recipe, const std::string& source_identity,
                     const farm::v1::MatrixCell& cell) {
  if (source_identity.empty()) return "";
  Sha256 h;
  auto field = [&h](const std::string& s) {
    h.Update(std::to_string(s.size()));
    h.Update(":");
    h.Update(s);
  };
  field(recipe.yaml());
  for (const auto& p : recipe.patches()) field(p.content());
  field(source_identity);
  for (const auto* v : {&cell.python(), &cell.torch(), &cell.cuda(), &cell.arch_list(),
                        &cell.platform()}) {
    field(*v);
  }
  return h.HexDigest();
}

Result<farm::v1::Recipe> PrepareRecipe(const farm::v1::SubmitBuildRequest& req) {
  std::string name = req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path();
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, recipe::ParseRecipe(req.recipe_yaml(), name));
  FARM_RETURN_IF_ERROR(recipe::AttachPatches(&recipe, req.patches()));
  FARM_RETURN_IF_ERROR(recipe::AttachValidationScript(&recipe, req.validation_script()));
  if (req.has_source() && req.source().kind_case() != farm::v1::Source::KIND_NOT_SET) {
    *recipe.mutable_source() = req.source();
  }
  return recipe;
}

// Sets the commit of a git source that names only a branch or tag, so the key (and the
// worker) use exactly the commit the ref points to now.
Status ResolveSource(const ServiceContext& ctx, farm::v1::Recipe* recipe) {
  if (!recipe->source().has_git()) return Status::Ok();
  farm::v1::GitSource* git = recipe->mutable_source()->mutable_git();
  if (!git->commit().empty() || git->ref().empty() || ctx.resolver == nullptr) {
    return Status::Ok();
  }
  auto commit = ctx.resolver->ResolveGitRef(git->url(), git->ref());
  if (!commit.ok()) {
    return Status::FailedPrecondition("cannot resolve " + git->ref() + " of " + git->url() +
                                      ": " + commit.status().message());
  }
  git->set_commit(commit.value());
  return Status::Ok();
}

}  // namespace

Result<int64_t> SubmitLinked(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                             const std::string& who, store::BuildLinks* links) {
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, PrepareRecipe(req));
  FARM_ASSIGN_OR_RETURN(std::string source_sha, CheckBuildSource(ctx, recipe.mutable_source()));
  FARM_RETURN_IF_ERROR(ResolveSource(ctx, &recipe));
  const farm::v1::MatrixAxes& requested = HasAxes(req.matrix()) ? req.matrix() : recipe.matrix();
  recipe::MatrixExpansion expansion = recipe::ExpandMatrix(requested, recipe.matrix());
  std::ostringstream rejected;
  for (const auto& r : expansion.rejected) rejected << r << "\n";
  if (expansion.cells.empty()) {
    return Status::InvalidArgument("the matrix has no buildable cell:\n" + rejected.str());
  }
  FARM_RETURN_IF_ERROR(recipe::CheckWheelNames(
      recipe, expansion.cells, req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path(),
      req.matrix().arch_lists_size() > 0));
  int64_t now = ctx.clock->NowUnixMs();
  store::BuildRow build{.recipe_name = recipe.name(), .recipe = recipe.SerializeAsString(),
                        .priority = req.priority(), .submitted_by = who,
                        .rejected_cells = rejected.str(), .created_ms = now,
                        .source_sha256 = source_sha};
  std::string source_id = schedule::SourceIdentity(recipe.source(), req.source_digest());
  std::vector<store::JobRow> jobs;
  farm::v1::JobNeeds needs;
  needs.set_target_gpu(recipe.build_on_target_gpu());
  for (const auto& cell : expansion.cells) {
    store::JobRow job{.cell = cell.SerializeAsString(), .priority = req.priority(),
                      .build_key = BuildKey(recipe, source_id, cell),
                      .max_attempts = recipe.retry().max_attempts() > 0
                                          ? recipe.retry().max_attempts()
                                          : ctx.tunables.max_attempts,
                      .created_ms = now,
                      .needs = needs.target_gpu() ? needs.SerializeAsString() : "",
                      .compile_mib = Mib(recipe.gb_per_compile_job()),
                      .validation_mib = Mib(recipe.validation().gpu_memory_gb())};
    if (!req.force() && !job.build_key.empty()) {
      // Only succeeded jobs with artifacts answer: a failed result is never reused.
      FARM_ASSIGN_OR_RETURN(auto prior, ctx.store->FindSucceededJob(job.build_key));
      if (prior) job.reused_from = prior->id;
    }
    jobs.push_back(std::move(job));
  }
  // A forced build is built even when an identical one is in flight.
  links->merge_in_flight = !req.force();
  FARM_RETURN_IF_ERROR(ctx.store->CreateBuildLinked(&build, &jobs, links));
  int reused = 0, merged = 0;
  for (const auto& j : jobs) reused += j.reused_from > 0, merged += j.not_before_ms > 0;
  log::Info("build " + std::to_string(build.id) + " of " + recipe.name() + " submitted by " +
            who + " with " + std::to_string(jobs.size()) + " job(s), " +
            std::to_string(reused) + " answered from stored wheels, " + std::to_string(merged) +
            " waiting on identical jobs in flight");
  return build.id;
}

Result<farm::v1::Build> Submit(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                               const Principal& who) {
  store::BuildLinks links;
  FARM_ASSIGN_OR_RETURN(int64_t id, SubmitLinked(ctx, req, who.name, &links));
  return LoadBuild(ctx, id);
}

}  // namespace farm::api
