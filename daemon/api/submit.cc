// SubmitBuild: parse and validate the recipe, expand the matrix, reuse succeeded jobs with
// the same build key, store the build. Nothing is stored when any check fails.
#include <sstream>

#include "common/log.h"
#include "common/sha256.h"
#include "daemon/api/client_service.h"
#include "daemon/model/convert.h"
#include "daemon/recipe/matrix.h"
#include "daemon/recipe/recipe.h"

namespace farm::api {


namespace {

bool HasAxes(const farm::v1::MatrixAxes& m) {
  return m.python_size() || m.torch_size() || m.cuda_size() || m.arch_lists_size() ||
         m.platform_size() || m.include_size();
}

std::string SourceIdentity(const farm::v1::Source& src, const std::string& digest) {
  if (src.has_git()) return src.git().commit().empty() ? "" : "git:" + src.git().url() + "@" + src.git().commit();
  // A local directory or tarball is identified by its content digest, never its path.
  return digest.empty() ? "" : "content:" + digest;
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
  if (req.has_source() && req.source().kind_case() != farm::v1::Source::KIND_NOT_SET) {
    *recipe.mutable_source() = req.source();
  }
  return recipe;
}

}  // namespace

Result<farm::v1::Build> Submit(const ServiceContext& ctx, const farm::v1::SubmitBuildRequest& req,
                               const Principal& who) {
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, PrepareRecipe(req));
  const farm::v1::MatrixAxes& requested = HasAxes(req.matrix()) ? req.matrix() : recipe.matrix();
  recipe::MatrixExpansion expansion = recipe::ExpandMatrix(requested, recipe.matrix());
  std::ostringstream rejected;
  for (const auto& r : expansion.rejected) rejected << r << "\n";
  if (expansion.cells.empty()) {
    return Status::InvalidArgument("the matrix has no buildable cell:\n" + rejected.str());
  }
  int64_t now = ctx.clock->NowUnixMs();
  store::BuildRow build{.recipe_name = recipe.name(), .recipe = recipe.SerializeAsString(),
                        .priority = req.priority(), .submitted_by = who.name,
                        .rejected_cells = rejected.str(), .created_ms = now};
  std::string source_id = SourceIdentity(recipe.source(), req.source_digest());
  std::vector<store::JobRow> jobs;
  for (const auto& cell : expansion.cells) {
    store::JobRow job{.cell = cell.SerializeAsString(), .priority = req.priority(),
                      .build_key = BuildKey(recipe, source_id, cell),
                      .max_attempts = recipe.retry().max_attempts() > 0
                                          ? recipe.retry().max_attempts()
                                          : ctx.tunables.max_attempts,
                      .created_ms = now};
    if (!req.force() && !job.build_key.empty()) {
      FARM_ASSIGN_OR_RETURN(auto prior, ctx.store->FindSucceededJob(job.build_key));
      if (prior) job.reused_from = prior->id;
    }
    jobs.push_back(std::move(job));
  }
  FARM_RETURN_IF_ERROR(ctx.store->CreateBuild(&build, &jobs));
  log::Info("build " + std::to_string(build.id) + " of " + recipe.name() + " submitted by " +
            who.name + " with " + std::to_string(jobs.size()) + " job(s)");
  return LoadBuild(ctx, build.id);
}

}  // namespace farm::api
