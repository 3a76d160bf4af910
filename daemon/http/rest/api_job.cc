// GET /api/v1/jobs/{id} and /api/v1/builds/{id}: everything the job and build pages show
// except the log lines.
#include <boost/json.hpp>

#include "common/recipe/matrix.h"
#include "common/wheel/job_check.h"
#include "common/wheel/wheel_name.h"
#include "daemon/http/index/index_catalog.h"
#include "daemon/http/rest/api.h"
#include "daemon/http/rest/job_views.h"
#include "daemon/http/rest/json_util.h"
#include "daemon/model/convert.h"
#include "daemon/model/lock_info.h"
#include "daemon/model/torch_proofs.h"
#include "farm/v1/types.pb.h"

namespace farm::http {

namespace json = boost::json;

namespace {

json::array AttemptsJson(const std::vector<store::AttemptRow>& rows, const FleetView& fleet) {
  json::array out;
  for (const auto& a : rows) {
    json::value v = ProtoToJson(model::AttemptToProto(a));
    v.as_object()["running"] = a.finished_ms == 0;
    v.as_object()["worker_name"] = fleet.NameOf(a.worker_id);
    out.push_back(std::move(v));
  }
  return out;
}

// An artifact with its project, version, variant, download URL, and whether the index
// lists it (else its pip line must name the file).
json::object ArtifactJson(const store::ArtifactRow& a, const std::string& variant,
                          const std::string& arch_list, bool include_pending) {
  farm::v1::Artifact artifact = model::ArtifactToProto(a);
  json::value v = ProtoToJson(artifact);
  json::object& o = v.as_object();
  o["arch_warning"] = wheel::ArchListIgnoredMessage(arch_list, artifact.manifest());
  auto nv = WheelNameVersion(a.filename);
  o["project"] = nv.ok() ? wheel::NormalizeProjectName(nv->first) : "";
  o["version"] = nv.ok() ? nv->second : "";
  o["variant"] = variant;
  o["url"] = "/files/" + a.sha256 + "/" + a.filename;
  o["index_path"] = "/" + variant + "/simple/";
  o["indexed"] = IndexListable(a.validation, include_pending);
  return std::move(o);
}

// The wheels a build delivered: per succeeded job, the artifacts of its counted attempt
// (or the reused copies, attempt 0), each with the publications of that artifact.
Result<json::array> WheelsJson(const DashboardDeps& deps, const std::vector<store::JobRow>& jobs,
                               const std::vector<store::PublicationRow>& pubs,
                               bool include_pending) {
  json::array out;
  for (const auto& j : jobs) {
    if (j.state != store::kJobSucceeded) continue;
    FARM_ASSIGN_OR_RETURN(auto artifacts, deps.store->ListArtifacts(j.id));
    auto cell = model::ParseBlob<farm::v1::MatrixCell>(j.cell);
    for (const auto& a : artifacts) {
      if (a.attempt != j.attempt && a.attempt != 0) continue;
      json::object o =
          ArtifactJson(a, VariantOf(cell.cuda(), cell.torch()), cell.arch_list(), include_pending);
      o["job_id"] = j.id;
      o["arch_list"] = cell.arch_list();
      json::array published;
      for (const auto& p : pubs) {
        if (p.artifact_id == a.id) published.push_back(PublicationJson(p));
      }
      o["publications"] = std::move(published);
      out.push_back(std::move(o));
    }
  }
  return out;
}

// The job's graph (recipe `requires:`): the jobs it requires with the wheels it consumed,
// and the jobs that require it. A store without build graphs shows none.
Status AddGraph(const DashboardDeps& deps, const store::JobRow& job, json::object& o) {
  auto requirements = deps.store->ListRequirements(job.id);
  if (requirements.status().code() == StatusCode::kUnimplemented) return Status::Ok();
  FARM_RETURN_IF_ERROR(requirements.status());
  FARM_ASSIGN_OR_RETURN(auto inputs, deps.store->ListJobInputs(job.id));
  FARM_ASSIGN_OR_RETURN(auto consumers, deps.store->ListConsumers(job.id));
  json::array req;
  for (const store::RequirementRow& r : *requirements) {
    json::array wheels;
    for (const store::JobInputRow& in : inputs) {
      if (in.required_job_id != r.required_job_id) continue;
      wheels.push_back(json::object{{"filename", in.artifact.filename},
                                    {"sha256", in.artifact.sha256},
                                    {"artifact_id", in.artifact.id}});
    }
    req.push_back(json::object{{"job_id", r.required_job_id},
                               {"build_id", r.required_build_id},
                               {"recipe_name", r.recipe_name},
                               {"state", JobStateName(r.required_state)},
                               {"for_build", r.for_build},
                               {"for_validation", r.for_validation},
                               {"wheels", std::move(wheels)}});
  }
  json::array by;
  for (const store::RequirementRow& c : consumers) {
    by.push_back(json::object{{"job_id", c.job_id},
                              {"build_id", c.consumer_build_id},
                              {"recipe_name", c.consumer_recipe},
                              {"state", JobStateName(c.consumer_state)}});
  }
  o["requires"] = std::move(req);
  o["required_by"] = std::move(by);
  return Status::Ok();
}

// A stable-ABI build job: the torches its wheel was proven with, and each cell's proof.
Status AddProofs(const DashboardDeps& deps, const store::JobRow& job, json::object& o) {
  if (job.kind != store::kJobBuild || job.needs.empty()) return Status::Ok();
  farm::v1::Job proofs;
  FARM_RETURN_IF_ERROR(model::AddTorchProofs(*deps.store, job, &proofs));
  if (proofs.torch_proofs_size() == 0) return Status::Ok();
  json::array list, proven;
  for (const auto& p : proofs.torch_proofs()) list.push_back(ProtoToJson(p));
  for (const auto& t : proofs.proven_torch()) proven.push_back(json::value(t));
  o["torch_proofs"] = std::move(list);
  o["proven_torch"] = std::move(proven);
  return Status::Ok();
}

// A provisioned job: its environment lock (size, torch, what changed since the previous build
// of the recipe in its cell), as farmctl show says it.
Status AddLock(const DashboardDeps& deps, const store::JobRow& job, const std::string& recipe,
               json::object& o) {
  FARM_ASSIGN_OR_RETURN(std::optional<farm::v1::LockInfo> info,
                        model::JobLockInfo(*deps.store, *deps.store, job, recipe));
  if (info) o["lock"] = ProtoToJson(*info);
  return Status::Ok();
}

// A job of a build page or the job page: the row, its worker's name, why it waits, how
// far it is, what it requires and, when it failed, why.
Result<json::object> DetailedJobJson(const DashboardDeps& deps, const store::JobRow& job,
                                     const store::BuildRow& build, const FleetView& fleet,
                                     WaitingExplainer& waiting,
                                     std::map<std::string, int64_t>& expected) {
  json::object o = JobViewJson(job, fleet, waiting);
  FARM_RETURN_IF_ERROR(AddRunFacts(deps, build.recipe_name, job, expected, o));
  FARM_RETURN_IF_ERROR(AddGraph(deps, job, o));
  FARM_RETURN_IF_ERROR(AddProofs(deps, job, o));
  FARM_RETURN_IF_ERROR(AddLock(deps, job, build.recipe_name, o));
  std::vector<store::AttemptRow> attempts;
  if (job.state == store::kJobFailed || job.attempt > 1) {
    FARM_ASSIGN_OR_RETURN(attempts, deps.store->ListAttempts(job.id));
  }
  if (job.attempt > 1) AddAttemptTimes(job, attempts, fleet.now_ms, o);
  if (job.state == store::kJobFailed) {
    FARM_ASSIGN_OR_RETURN(
        o["failure"],
        FailureJson(deps, job, attempts, model::ParseBlob<farm::v1::Recipe>(build.recipe)));
  }
  return o;
}

Result<json::object> JobPage(const DashboardDeps& deps, int64_t job_id, bool include_pending) {
  FARM_ASSIGN_OR_RETURN(auto job, deps.store->GetJob(job_id));
  FARM_ASSIGN_OR_RETURN(auto build, deps.store->GetBuild(job.build_id));
  FARM_ASSIGN_OR_RETURN(auto attempts, deps.store->ListAttempts(job_id));
  FARM_ASSIGN_OR_RETURN(auto artifacts, deps.store->ListArtifacts(job_id));
  FARM_ASSIGN_OR_RETURN(FleetView fleet, ReadFleet(deps));
  WaitingExplainer waiting(fleet);
  std::map<std::string, int64_t> expected;
  FARM_ASSIGN_OR_RETURN(json::object o,
                        DetailedJobJson(deps, job, build, fleet, waiting, expected));
  o["recipe_name"] = build.recipe_name;
  o["build_state"] = BuildStateName(build.state);
  o["attempts"] = AttemptsJson(attempts, fleet);
  json::array arts;
  const std::string arch_list = model::ParseBlob<farm::v1::MatrixCell>(job.cell).arch_list();
  for (const auto& a : artifacts) {
    arts.push_back(ArtifactJson(a, o["variant"].as_string().c_str(), arch_list, include_pending));
  }
  o["artifacts"] = std::move(arts);
  o["now"] = fleet.now_ms;
  return o;
}

constexpr size_t kMaxWorkersPerJobOfABuild = 20;

Result<json::object> BuildPage(const DashboardDeps& deps, int64_t build_id, bool include_pending) {
  FARM_ASSIGN_OR_RETURN(auto build, deps.store->GetBuild(build_id));
  FARM_ASSIGN_OR_RETURN(auto jobs, deps.store->ListJobs(build_id));
  FARM_ASSIGN_OR_RETURN(auto pubs, deps.store->ListPublications(build_id));
  FARM_ASSIGN_OR_RETURN(FleetView fleet, ReadFleet(deps));
  json::object o = BuildJson(build);
  auto recipe = model::ParseBlob<farm::v1::Recipe>(build.recipe);
  o["recipe_version"] = recipe.version();
  o["recipe_yaml"] = recipe.yaml();
  o["matrix"] = ProtoToJson(recipe.matrix());
  o["torch_followed"] = recipe::DescribeTorchFollow(recipe);  // "" unless the axis follows
  // The proto must outlive the loop: a range-for over a member of a temporary reads freed
  // memory (the temporary dies before the loop body runs).
  const farm::v1::Build build_proto = model::BuildToProto(build);
  json::array rejected;
  for (const auto& cell : build_proto.rejected_cells()) rejected.push_back(json::value(cell));
  o["rejected_cells"] = std::move(rejected);
  // Each job's tooltip: per worker in a small fleet, per reason in a large one (a 100-job
  // build that 1000 workers cannot take was 100,000 entries); the job page lists them all.
  WaitingExplainer waiting(fleet, kMaxWorkersPerJobOfABuild);
  std::map<std::string, int64_t> expected;
  json::array arr;
  for (const auto& j : jobs) {
    FARM_ASSIGN_OR_RETURN(json::object job,
                          DetailedJobJson(deps, j, build, fleet, waiting, expected));
    arr.push_back(std::move(job));
  }
  o["jobs"] = std::move(arr);
  o["job_counts"] = CountJobs(jobs);
  AddBlocked(o, jobs, waiting);
  FARM_ASSIGN_OR_RETURN(o["wheels"], WheelsJson(deps, jobs, pubs, include_pending));
  json::array publications;
  for (const auto& p : pubs) publications.push_back(PublicationJson(p));
  o["publications"] = std::move(publications);
  o["publishing"] = PublishingSummary(pubs);
  o["now"] = fleet.now_ms;
  return o;
}

}  // namespace

Response ApiJob(const DashboardDeps& deps, int64_t job_id, bool index_include_pending) {
  auto page = JobPage(deps, job_id, index_include_pending);
  return page.ok() ? JsonResponse(200, json::serialize(*page)) : ErrorResponse(page.status());
}

Response ApiBuild(const DashboardDeps& deps, int64_t build_id, bool index_include_pending) {
  auto page = BuildPage(deps, build_id, index_include_pending);
  return page.ok() ? JsonResponse(200, json::serialize(*page)) : ErrorResponse(page.status());
}

}  // namespace farm::http
