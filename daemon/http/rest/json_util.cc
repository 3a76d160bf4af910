#include "daemon/http/rest/json_util.h"

#include <google/protobuf/util/json_util.h>

#include <map>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/http/rest/api.h"
#include "daemon/model/convert.h"
#include "daemon/model/job_log.h"
#include "farm/v1/types.pb.h"

namespace farm::http {

namespace json = boost::json;

json::value ProtoToJson(const google::protobuf::Message& msg) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(msg, &out, opts).ok()) return json::object();
  json::error_code ec;
  json::value v = json::parse(out, ec);
  return ec ? json::value(json::object()) : v;
}

std::string JobStateName(int state) {
  return std::string(store::JobStateName(static_cast<store::JobState>(state)));
}

std::string BuildStateName(int state) {
  return std::string(store::BuildStateName(static_cast<store::BuildState>(state)));
}

std::string CauseName(int cause) {
  return farm::v1::AttemptCause_Name(static_cast<farm::v1::AttemptCause>(cause));
}

json::object JobJson(const store::JobRow& job, int64_t now_ms) {
  auto cell = model::ParseBlob<farm::v1::MatrixCell>(job.cell);
  bool ran = job.started_ms > 0;
  int64_t wait_end = ran ? job.started_ms : (job.finished_ms > 0 ? job.finished_ms : now_ms);
  int64_t waited = job.reused_from > 0 ? 0 : std::max<int64_t>(0, wait_end - job.created_ms);
  int64_t ran_ms = !ran ? 0
                        : std::max<int64_t>(
                              0, (job.finished_ms > 0 ? job.finished_ms : now_ms) - job.started_ms);
  return json::object{
      {"id", job.id},
      {"build_id", job.build_id},
      {"cell", json::object{{"python", cell.python()},
                            {"torch", cell.torch()},
                            {"cuda", cell.cuda()},
                            {"arch_list", cell.arch_list()},
                            {"platform", cell.platform()}}},
      {"variant", VariantOf(cell.cuda(), cell.torch())},
      {"state", JobStateName(job.state)},
      {"worker_id", job.worker_id},
      {"attempt", job.attempt},
      {"error", job.error},
      {"reused_from", job.reused_from},
      {"created_at", FormatRfc3339(job.created_ms)},
      {"started_at", FormatRfc3339(job.started_ms)},
      {"finished_at", FormatRfc3339(job.finished_ms)},
      {"waited_ms", waited},
      {"ran_ms", ran_ms},
      {"kind", job.kind == store::kJobValidate ? "validation" : "build"},
      {"target_job_id", job.target_job_id},
      {"target_attempt", job.target_attempt},
  };
}

json::object CountJobs(const std::vector<store::JobRow>& jobs) {
  std::map<int, int64_t> counts;
  int64_t validations = 0;
  for (const auto& j : jobs) {
    counts[j.state]++;
    validations += j.kind == store::kJobValidate;
  }
  json::object out{{"total", static_cast<int64_t>(jobs.size())}, {"validation", validations}};
  for (int s = store::kJobPending; s <= store::kJobCancelled; ++s) out[JobStateName(s)] = counts[s];
  return out;
}

json::object BuildJson(const store::BuildRow& build) {
  return json::object{
      {"id", build.id},
      {"recipe_name", build.recipe_name},
      {"state", BuildStateName(build.state)},
      {"priority", build.priority},
      {"submitted_by", build.submitted_by},
      {"owner", build.submitted_by},
      {"created_at", FormatRfc3339(build.created_ms)},
      {"finished_at", FormatRfc3339(build.finished_ms)},
  };
}

json::object PublicationJson(const store::PublicationRow& row) {
  return json::object{{"id", row.id},
                      {"target", row.target},
                      {"kind", row.kind},
                      {"repo", row.repo},
                      {"ref", row.ref},
                      {"path", row.path},
                      {"filename", row.filename},
                      {"state", store::PublicationStateName(row.state)},
                      {"attempts", row.attempts},
                      {"error", log::Redact(row.error)},
                      {"remote_url", row.remote_url},
                      {"updated_at", FormatRfc3339(row.updated_ms)}};
}

json::object PublishingSummary(const std::vector<store::PublicationRow>& rows) {
  json::object counts;
  std::string first_error;
  for (const auto& r : rows) {
    std::string_view name = store::PublicationStateName(r.state);
    counts[name] = (counts.contains(name) ? counts[name].as_int64() : 0) + 1;
    if (r.state == store::PublicationState::kFailed && first_error.empty())
      first_error = log::Redact(r.error);
  }
  return json::object{{"total", static_cast<int64_t>(rows.size())},
                      {"states", std::move(counts)},
                      {"error", first_error}};
}

namespace {

json::array GpusJson(const farm::v1::Capabilities& caps) {
  json::array gpus;
  for (const auto& g : caps.gpus()) {
    gpus.push_back(json::object{
        {"index", g.index()},
        {"name", g.name()},
        {"compute_capability", std::to_string(g.cc_major()) + "." + std::to_string(g.cc_minor())},
        {"memory_bytes", g.memory_bytes()},
        {"unified_memory", g.unified_memory()}});
  }
  return gpus;
}

}  // namespace

json::object WorkerJson(const store::WorkerRow& worker, int64_t now_ms) {
  auto caps = model::ParseBlob<farm::v1::Capabilities>(worker.capabilities);
  json::array toolkits;
  for (const auto& t : caps.toolkits()) toolkits.push_back(json::value(t.version()));
  json::array pythons;
  for (const auto& p : caps.pythons()) {
    pythons.push_back(json::value(
        p.version() + (p.torch_version().empty() ? "" : " torch " + p.torch_version())));
  }
  return json::object{
      {"id", worker.id},
      {"name", worker.name},
      {"hostname", caps.hostname()},
      {"platform", caps.platform()},
      {"wsl2", caps.wsl2()},
      {"state", store::WorkerStateName(worker.state)},
      {"gpus", GpusJson(caps)},
      {"toolkits", std::move(toolkits)},
      {"pythons", std::move(pythons)},
      {"driver_version", caps.driver_version()},
      {"probe_error", caps.probe_error()},
      {"gpu_driver_error", caps.gpu_driver_error()},
      {"last_heartbeat", FormatRfc3339(worker.last_heartbeat_ms)},
      {"heartbeat_age_ms", worker.last_heartbeat_ms > 0 ? now_ms - worker.last_heartbeat_ms : -1},
      {"running_jobs", json::array()},
  };
}

boost::json::object LogLineJson(const store::LogLineRow& l) {
  boost::json::object o{{"seq", l.seq},
                        {"stream", l.stream},
                        {"text", l.text},
                        {"time_ms", l.time_ms},
                        {"level", model::LineLevel(l.text)}};
  if (std::string phase = model::LinePhase(l.stream, l.text); !phase.empty()) o["phase"] = phase;
  return o;
}

}  // namespace farm::http
