#include "daemon/http/rest/job_views.h"

#include "daemon/http/rest/json_util.h"
#include "daemon/model/convert.h"
#include "daemon/model/failure.h"
#include "daemon/sched/rows.h"

namespace farm::http {

namespace json = boost::json;

std::string FleetView::NameOf(const std::string& worker_id) const {
  auto it = names.find(worker_id);
  return it == names.end() ? worker_id : it->second;
}

Result<FleetView> ReadFleet(const DashboardDeps& deps) {
  FARM_ASSIGN_OR_RETURN(auto rows, deps.store->ListWorkers());
  FleetView view;
  view.now_ms = deps.clock->NowUnixMs();
  for (const auto& w : rows) view.names[w.id] = w.name;
  view.fleet = sched::FleetOf(rows);
  view.peers = sched::AvailablePeers(view.fleet);
  return view;
}

const sched::Waiting& WaitingExplainer::Explain(const store::JobRow& job) {
  // A validation job shares its cell with the build it validates but waits for other
  // workers: its kind and needs are part of what it is explained by.
  std::string key = job.cell + '\0' + std::to_string(job.not_before_ms) + '\0' + job.error + '\0' +
                    std::to_string(job.kind) + '\0' + job.needs;
  auto it = memo_.find(key);
  if (it == memo_.end()) {
    it =
        memo_.emplace(key, sched::ExplainPendingJob(job, fleet_.fleet, fleet_.peers, fleet_.now_ms))
            .first;
  }
  return it->second;
}

json::object WaitingJson(const sched::Waiting& waiting, size_t max_workers) {
  json::array workers;
  bool by_reason = waiting.blocked.size() > max_workers;
  if (by_reason) {
    for (auto& [name, reason] : sched::ReasonEntries(waiting.blocked, max_workers)) {
      workers.push_back(json::object{{"name", std::move(name)}, {"reason", std::move(reason)}});
    }
  } else {
    for (const auto& b : waiting.blocked) {
      workers.push_back(
          json::object{{"id", b.worker_id}, {"name", b.worker_name}, {"reason", b.reason}});
    }
  }
  json::array able;
  for (const auto& name : waiting.able) able.push_back(json::value(name));
  json::object o{{"summary", waiting.summary},
                 {"unplaceable", waiting.unplaceable},
                 {"workers", std::move(workers)},
                 {"able", std::move(able)}};
  if (by_reason) o["workers_total"] = waiting.blocked.size();
  return o;
}

json::object JobViewJson(const store::JobRow& job, const FleetView& fleet,
                         WaitingExplainer& waiting) {
  json::object o = JobJson(job, fleet.now_ms);
  o["worker_name"] = job.worker_id.empty() ? "" : fleet.NameOf(job.worker_id);
  if (job.state == store::kJobPending) {
    o["waiting"] = WaitingJson(waiting.Explain(job), waiting.max_workers());
  }
  return o;
}

void AddBlocked(json::object& build, const std::vector<store::JobRow>& jobs,
                WaitingExplainer& waiting) {
  // Validation jobs do not hold a build back: its wheels exist and wait for hardware.
  int64_t unfinished_builds = 0, stuck_builds = 0, stuck = 0;
  std::string reason;
  for (const auto& j : jobs) {
    if (store::IsTerminal(j.state)) continue;
    bool builds = j.kind != store::kJobValidate;
    unfinished_builds += builds;
    if (j.state != store::kJobPending) continue;
    const sched::Waiting& w = waiting.Explain(j);
    if (!w.unplaceable) continue;
    ++stuck;
    stuck_builds += builds;
    if (reason.empty()) reason = w.summary;
  }
  bool blocked = unfinished_builds > 0 && stuck_builds == unfinished_builds;
  build["blocked"] = blocked;
  build["unplaceable_jobs"] = stuck;
  if (stuck > 0) build["blocked_reason"] = reason;
}

Status AddRunFacts(const DashboardDeps& deps, const std::string& recipe_name,
                   const store::JobRow& job, std::map<std::string, int64_t>& expected,
                   json::object& out) {
  if (store::IsTerminal(job.state)) return Status::Ok();
  if (job.state == store::kJobRunning) {
    FARM_ASSIGN_OR_RETURN(auto attempts, deps.store->ListAttempts(job.id));
    if (const store::AttemptRow* a = model::CountedAttempt(job, attempts)) {
      out["progress"] = json::object{{"units_done", a->units_done},
                                     {"units_total", a->units_total},
                                     {"peak_rss_bytes", a->peak_rss_bytes}};
    }
  }
  // A build's run time says nothing of how long a validation of its wheels takes.
  if (job.kind == store::kJobValidate) return Status::Ok();
  auto it = expected.find(job.cell);
  if (it == expected.end()) {
    FARM_ASSIGN_OR_RETURN(auto last,
                          deps.store->LastSuccessfulRunMs(recipe_name, job.cell, job.id));
    it = expected.emplace(job.cell, last.value_or(-1)).first;
  }
  if (it->second >= 0) out["expected_ms"] = it->second;
  return Status::Ok();
}

void AddAttemptTimes(const store::JobRow& job, const std::vector<store::AttemptRow>& attempts,
                     int64_t now_ms, json::object& out) {
  int64_t ran = 0;
  for (const auto& a : attempts) {
    if (a.started_ms <= 0) continue;
    ran += std::max<int64_t>(0, (a.finished_ms > 0 ? a.finished_ms : now_ms) - a.started_ms);
  }
  int64_t life = (job.finished_ms > 0 ? job.finished_ms : now_ms) - job.created_ms;
  out["ran_ms"] = ran;
  out["waited_ms"] = std::max<int64_t>(0, life - ran);
}

Result<json::object> FailureJson(const DashboardDeps& deps, const store::JobRow& job,
                                 const std::vector<store::AttemptRow>& attempts,
                                 const farm::v1::Recipe& recipe, bool with_lines) {
  FARM_ASSIGN_OR_RETURN(model::JobFailure failure,
                        model::ExplainFailure(*deps.store, job, attempts, recipe, with_lines));
  json::array lines;
  for (auto& l : failure.lines) lines.push_back(json::value(l));
  return json::object{
      {"phase", failure.phase}, {"summary", failure.summary}, {"lines", std::move(lines)}};
}

}  // namespace farm::http
