// GET /api/v1/jobs/{id}: everything the job page shows except the log lines.
#include <boost/json.hpp>

#include "common/wheel/job_check.h"
#include "daemon/http/api.h"
#include "daemon/http/index_catalog.h"
#include "daemon/http/json_util.h"
#include "daemon/model/convert.h"
#include "farm/v1/types.pb.h"

namespace farm::http {

namespace json = boost::json;

namespace {

json::array AttemptsJson(const std::vector<store::AttemptRow>& rows) {
  json::array out;
  for (const auto& a : rows) {
    json::value v = ProtoToJson(model::AttemptToProto(a));
    v.as_object()["running"] = a.finished_ms == 0;
    out.push_back(std::move(v));
  }
  return out;
}

json::array ArtifactsJson(const std::vector<store::ArtifactRow>& rows, const std::string& variant,
                          const std::string& arch_list) {
  json::array out;
  for (const auto& a : rows) {
    farm::v1::Artifact artifact = model::ArtifactToProto(a);
    json::value v = ProtoToJson(artifact);
    json::object& o = v.as_object();
    o["arch_warning"] = wheel::ArchListIgnoredMessage(arch_list, artifact.manifest());
    auto nv = WheelNameVersion(a.filename);
    o["project"] = nv.ok() ? NormalizeProjectName(nv->first) : "";
    o["version"] = nv.ok() ? nv->second : "";
    o["variant"] = variant;
    o["url"] = "/files/" + a.sha256 + "/" + a.filename;
    o["index_path"] = "/" + variant + "/simple/";
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

Response ApiJob(const DashboardDeps& deps, int64_t job_id) {
  auto job = deps.store->GetJob(job_id);
  if (!job.ok()) return ErrorResponse(job.status());
  auto build = deps.store->GetBuild(job->build_id);
  if (!build.ok()) return ErrorResponse(build.status());
  auto attempts = deps.store->ListAttempts(job_id);
  if (!attempts.ok()) return ErrorResponse(attempts.status());
  auto artifacts = deps.store->ListArtifacts(job_id);
  if (!artifacts.ok()) return ErrorResponse(artifacts.status());
  int64_t now = deps.clock->NowUnixMs();
  json::object o = JobJson(*job, now);
  o["recipe_name"] = build->recipe_name;
  o["build_state"] = BuildStateName(build->state);
  o["attempts"] = AttemptsJson(*attempts);
  o["artifacts"] = ArtifactsJson(*artifacts, o["variant"].as_string().c_str(),
                                 model::ParseBlob<farm::v1::MatrixCell>(job->cell).arch_list());
  o["now"] = now;
  return JsonResponse(200, json::serialize(o));
}

}  // namespace farm::http
