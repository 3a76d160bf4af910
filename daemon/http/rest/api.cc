#include "daemon/http/rest/api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>

#include "common/clock.h"
#include "common/log.h"
#include "common/strings.h"
#include "daemon/auth/ownership.h"
#include "daemon/http/rest/job_views.h"
#include "daemon/http/rest/json_util.h"
#include "daemon/model/convert.h"
#include "farm/v1/types.pb.h"

namespace farm::http {

namespace json = boost::json;

namespace {

constexpr int kOverviewRunning = 200;
constexpr int kOverviewFailures = 10;
constexpr int kLogPage = 1000;
constexpr int kLogPageMax = 5000;
constexpr int64_t kLogTextMaxLines = 1'000'000;

int64_t QueryInt(const Request& req, const std::string& key, int64_t fallback) {
  auto it = req.query.find(key);
  if (it == req.query.end() || it->second.empty()) return fallback;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return fallback;
  return v;
}

// Jobs of many builds (the overview's lists) with their recipe's name, their worker's name
// and, while running, how far they are and how long they should take.
Result<json::array> JobsWithRecipe(const DashboardDeps& deps,
                                   const std::vector<store::JobRow>& jobs, const FleetView& fleet) {
  std::map<int64_t, std::string> recipes;
  std::map<std::string, std::map<std::string, int64_t>> expected;  // recipe -> cell -> ms
  WaitingExplainer waiting(fleet);
  json::array out;
  for (const auto& j : jobs) {
    if (!recipes.count(j.build_id)) {
      auto b = deps.store->GetBuild(j.build_id);
      recipes[j.build_id] = b.ok() ? b->recipe_name : "";
    }
    json::object o = JobViewJson(j, fleet, waiting);
    o["recipe_name"] = recipes[j.build_id];
    const std::string& recipe = recipes[j.build_id];
    FARM_RETURN_IF_ERROR(AddRunFacts(deps, recipe, j, expected[recipe], o));
    if (j.state == store::kJobFailed) {
      FARM_ASSIGN_OR_RETURN(auto attempts, deps.store->ListAttempts(j.id));
      FARM_ASSIGN_OR_RETURN(o["failure"], FailureJson(deps, j, attempts, {}, false));
    }
    out.push_back(std::move(o));
  }
  return out;
}

// Workers with the ids of the running jobs each holds (and which of them are validations).
Result<json::array> WorkersArray(const DashboardDeps& deps,
                                 const std::vector<store::JobRow>& running, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(auto workers, deps.store->ListWorkers());
  json::array out;
  for (const auto& w : workers) {
    json::object o = WorkerJson(w, now_ms);
    json::array ids, validations;
    for (const auto& j : running) {
      if (j.worker_id != w.id) continue;
      ids.push_back(j.id);
      if (j.kind == store::kJobValidate) validations.push_back(j.id);
    }
    o["running_jobs"] = std::move(ids);
    o["running_validation_jobs"] = std::move(validations);
    out.push_back(std::move(o));
  }
  return out;
}

Result<json::object> OverviewJson(const DashboardDeps& deps) {
  FARM_ASSIGN_OR_RETURN(FleetView fleet, ReadFleet(deps));
  int64_t now = fleet.now_ms;
  FARM_ASSIGN_OR_RETURN(auto counts, deps.store->CountJobsByState());
  FARM_ASSIGN_OR_RETURN(auto running,
                        deps.store->ListJobsInState(store::kJobRunning, 0, kOverviewRunning));
  FARM_ASSIGN_OR_RETURN(auto failed,
                        deps.store->ListJobsInState(store::kJobFailed, 0, kOverviewFailures));
  FARM_ASSIGN_OR_RETURN(auto workers, WorkersArray(deps, running, now));
  FARM_ASSIGN_OR_RETURN(auto running_json, JobsWithRecipe(deps, running, fleet));
  FARM_ASSIGN_OR_RETURN(auto failed_json, JobsWithRecipe(deps, failed, fleet));
  json::object by_state;
  for (int s = store::kJobPending; s <= store::kJobCancelled; ++s) {
    by_state[JobStateName(s)] = counts[static_cast<size_t>(s)];
  }
  return json::object{{"now", now},
                      {"queue_depth", counts[store::kJobPending]},
                      {"jobs_by_state", std::move(by_state)},
                      {"running", std::move(running_json)},
                      {"recent_failures", std::move(failed_json)},
                      {"workers", std::move(workers)}};
}

// The builds list's filters from the query: recipe, state ("failed" or "BUILD_FAILED"),
// submitter, and worker (a name or an id; a name may belong to several workers).
Result<store::BuildFilter> FilterOf(const DashboardDeps& deps, const Request& req) {
  store::BuildFilter f;
  auto get = [&](const char* key) {
    auto it = req.query.find(key);
    return it == req.query.end() ? std::string() : it->second;
  };
  f.recipe_name = get("recipe");
  f.submitted_by = get("submitter");
  if (std::string state = get("state"); !state.empty()) {
    for (int s = store::kBuildQueued; s <= store::kBuildCancelled; ++s) {
      std::string name = BuildStateName(s);
      std::string lower = AsciiLower(name.substr(6));  // "BUILD_"
      if (state == name || state == lower) f.state = s;
    }
    if (f.state == 0) return Status::InvalidArgument("unknown build state \"" + state + "\"");
  }
  if (std::string worker = get("worker"); !worker.empty()) {
    FARM_ASSIGN_OR_RETURN(auto rows, deps.store->ListWorkers());
    f.any_worker = true;
    for (const auto& w : rows) {
      if (w.id == worker || w.name == worker) f.worker_ids.push_back(w.id);
    }
  }
  return f;
}

// One page of the builds list: counts, publishing, duration and whether the build is
// blocked. The page's jobs and publications are read in one query each, the workers once,
// and each distinct pending cell is explained once.
Result<json::object> BuildsPage(const DashboardDeps& deps, const Request& req) {
  int64_t before = std::max<int64_t>(0, QueryInt(req, "before", 0));
  int limit = static_cast<int>(
      std::clamp<int64_t>(QueryInt(req, "limit", kDefaultPageSize), 1, kMaxPageSize));
  FARM_ASSIGN_OR_RETURN(store::BuildFilter filter, FilterOf(deps, req));
  // One row more than asked tells whether another page exists.
  FARM_ASSIGN_OR_RETURN(auto builds, deps.store->ListBuildsMatching(filter, before, limit + 1));
  bool more = static_cast<int>(builds.size()) > limit;
  if (more) builds.resize(static_cast<size_t>(limit));
  std::vector<int64_t> ids;
  for (const auto& b : builds) ids.push_back(b.id);
  FARM_ASSIGN_OR_RETURN(auto jobs_of, deps.store->ListJobsOfBuilds(ids));
  FARM_ASSIGN_OR_RETURN(auto pubs_of, deps.store->ListPublicationsOfBuilds(ids));
  std::optional<FleetView> fleet;
  std::optional<WaitingExplainer> waiting;
  json::array items;
  int64_t now = deps.clock->NowUnixMs();
  for (const auto& b : builds) {
    json::object o = BuildJson(b);
    const std::vector<store::JobRow>& jobs = jobs_of[b.id];
    o["jobs"] = CountJobs(jobs);
    o["duration_ms"] =
        std::max<int64_t>(0, (b.finished_ms > 0 ? b.finished_ms : now) - b.created_ms);
    bool pending = std::any_of(jobs.begin(), jobs.end(), [](const store::JobRow& j) {
      return j.state == store::kJobPending;
    });
    if (pending && !fleet) {
      FARM_ASSIGN_OR_RETURN(fleet, ReadFleet(deps));
      waiting.emplace(*fleet);
    }
    if (pending) AddBlocked(o, jobs, *waiting);
    o["publishing"] = PublishingSummary(pubs_of[b.id]);
    items.push_back(std::move(o));
  }
  int64_t next = more && !builds.empty() ? builds.back().id : 0;
  return json::object{{"builds", std::move(items)}, {"next_before", next}, {"now", now}};
}

}  // namespace

int64_t ParseId(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return (ec == std::errc() && p == s.data() + s.size() && v > 0) ? v : 0;
}

std::string VariantOf(const std::string& cuda, const std::string& torch) {
  std::string v;
  if (cuda.empty()) {
    v = "cpu";
  } else {
    v = "cu";
    for (char c : cuda) {
      if (c != '.') v.push_back(c);
    }
  }
  if (!torch.empty()) v += "-torch" + torch;
  return v;
}

Response ApiOverview(const DashboardDeps& deps) {
  auto r = OverviewJson(deps);
  return r.ok() ? JsonOk(r.value()) : ErrorResponse(r.status());
}

Response ApiBuilds(const DashboardDeps& deps, const Request& req) {
  auto page = BuildsPage(deps, req);
  return page.ok() ? JsonOk(page.value()) : ErrorResponse(page.status());
}

Response ApiPublications(const DashboardDeps& deps, const Request& req) {
  int limit = static_cast<int>(
      std::clamp<int64_t>(QueryInt(req, "limit", kDefaultPageSize * 4), 1, kMaxPageSize * 4));
  auto rows = deps.store->ListRecentPublications(limit);
  if (!rows.ok()) return ErrorResponse(rows.status());
  std::map<int64_t, std::string> recipes;
  json::array items;
  for (const auto& p : *rows) {
    if (!recipes.count(p.build_id)) {
      auto b = deps.store->GetBuild(p.build_id);
      recipes[p.build_id] = b.ok() ? b->recipe_name : "";
    }
    json::object o = PublicationJson(p);
    o["build_id"] = p.build_id;
    o["recipe_name"] = recipes[p.build_id];
    items.push_back(std::move(o));
  }
  auto counts = deps.store->CountPublicationsByState();
  if (!counts.ok()) return ErrorResponse(counts.status());
  json::object by_state;
  for (const auto& [state, n] : *counts) by_state[state] = n;
  return JsonOk(json::object{{"publications", std::move(items)},
                             {"by_state", std::move(by_state)},
                             {"now", deps.clock->NowUnixMs()}});
}

Response ApiWorkers(const DashboardDeps& deps) {
  int64_t now = deps.clock->NowUnixMs();
  auto running = deps.store->ListJobsInState(store::kJobRunning, 0, 10000);
  if (!running.ok()) return ErrorResponse(running.status());
  auto workers = WorkersArray(deps, *running, now);
  if (!workers.ok()) return ErrorResponse(workers.status());
  return JsonOk(json::object{{"now", now}, {"workers", std::move(workers.value())}});
}

namespace {

Result<auth::Principal> Check(const DashboardDeps& deps, const Request& req, auth::Need need,
                              const audit::Entry* entry) {
  if (deps.auth == nullptr) return Status::Unauthenticated("no token authority");
  FARM_ASSIGN_OR_RETURN(auth::Principal who, deps.auth->Identify(req.authorization));
  Status role = auth::TokenAuthority::CheckRole(who, need);
  if (!role.ok()) {
    if (deps.audit != nullptr && entry != nullptr) deps.audit->Record(who, *entry, role);
    return role;
  }
  return who;
}

}  // namespace

Result<auth::Principal> Actor(const DashboardDeps& deps, const Request& req, auth::Need need,
                              const audit::Entry& entry) {
  return Check(deps, req, need, &entry);
}

Result<auth::Principal> Actor(const DashboardDeps& deps, const Request& req, auth::Need need) {
  return Check(deps, req, need, nullptr);
}

Response ApiCancelBuild(const DashboardDeps& deps, int64_t build_id, const auth::Principal& who,
                        bool index_include_pending) {
  audit::Entry entry{audit::Action::kBuildCancel, "build " + std::to_string(build_id)};
  Status s = audit::Audited(deps.audit, who, entry, [&]() -> Status {
    FARM_RETURN_IF_ERROR(auth::MayChangeBuild(*deps.store, who, build_id));
    return deps.store->CancelBuild(build_id, deps.clock->NowUnixMs(), who.name);
  });
  if (!s.ok()) return ErrorResponse(s);
  log::Info("build " + std::to_string(build_id) + " cancelled from the dashboard by " + who.name);
  return ApiBuild(deps, build_id, index_include_pending);
}

Response ApiRetryJob(const DashboardDeps& deps, int64_t job_id, const auth::Principal& who,
                     bool index_include_pending) {
  audit::Entry entry{audit::Action::kJobRetry, "job " + std::to_string(job_id)};
  Status s = audit::Audited(deps.audit, who, entry, [&]() -> Status {
    FARM_RETURN_IF_ERROR(auth::MayChangeJob(*deps.store, who, job_id));
    return deps.store->RetryJob(job_id, deps.clock->NowUnixMs());
  });
  if (!s.ok()) return ErrorResponse(s);
  log::Info("job " + std::to_string(job_id) + " retried from the dashboard by " + who.name);
  return ApiJob(deps, job_id, index_include_pending);
}

Response ApiDrainWorker(const DashboardDeps& deps, const auth::Principal& who,
                        const std::string& worker_id, bool drain) {
  audit::Entry entry{drain ? audit::Action::kWorkerDrain : audit::Action::kWorkerUndrain,
                     "worker " + worker_id};
  Status s = audit::Audited(deps.audit, who, entry,
                            [&] { return deps.store->SetDrainRequested(worker_id, drain); });
  if (!s.ok()) return ErrorResponse(s);
  return ApiWorkers(deps);
}

Response ApiAudit(const DashboardDeps& deps, const Request& req) {
  if (deps.audit != nullptr) deps.audit->Flush();  // the records of calls that answered
  auto principal = req.query.find("principal");
  store::AuditFilter filter{
      .principal = principal == req.query.end() ? std::string() : principal->second,
      .before_id = std::max<int64_t>(0, QueryInt(req, "before", 0)),
      .limit = static_cast<int>(std::clamp<int64_t>(QueryInt(req, "limit", 50), 1, 1000))};
  auto rows = deps.store->ListAudit(filter);
  if (!rows.ok()) return ErrorResponse(rows.status());
  json::array out;
  for (const auto& r : *rows) {
    out.push_back(json::object{{"id", r.id},
                               {"time", FormatRfc3339(r.time_ms)},
                               {"principal", r.principal},
                               {"role", r.role},
                               {"action", r.action},
                               {"target", r.target},
                               {"outcome", r.outcome},
                               {"detail", r.detail}});
  }
  int64_t next = static_cast<int>(rows->size()) == filter.limit ? rows->back().id : 0;
  return JsonOk(json::object{{"records", std::move(out)}, {"next_before", next}});
}

Response ApiChart(const DashboardDeps& deps) {
  auto rows = deps.store->ListJobTimings(2000);
  if (!rows.ok()) return ErrorResponse(rows.status());
  // One series per recipe and cell: a line through builds of different cells would join
  // things that take different times.
  std::map<std::pair<std::string, std::string>, json::array> series;
  for (auto it = rows->rbegin(); it != rows->rend(); ++it) {
    series[{it->recipe_name, it->cell}].push_back(
        json::object{{"job_id", it->job_id},
                     {"build_id", it->build_id},
                     {"finished_ms", it->finished_ms},
                     {"duration_ms", it->finished_ms - it->started_ms},
                     {"state", JobStateName(it->state)}});
  }
  json::array out;
  for (auto& [key, points] : series) {
    auto cell = model::ParseBlob<farm::v1::MatrixCell>(key.second);
    std::string label;
    for (const auto& [prefix, value] : {std::pair<const char*, std::string>{"py", cell.python()},
                                        {"torch", cell.torch()},
                                        {"cu", cell.cuda()},
                                        {"", cell.arch_list()}}) {
      if (!value.empty()) label += (label.empty() ? "" : " ") + std::string(prefix) + value;
    }
    out.push_back(
        json::object{{"recipe", key.first}, {"cell", label}, {"points", std::move(points)}});
  }
  return JsonOk(json::object{{"series", std::move(out)}});
}

Response ApiJobLog(const DashboardDeps& deps, int64_t job_id, const Request& req) {
  auto job = deps.store->GetJob(job_id);
  if (!job.ok()) return ErrorResponse(job.status());
  int attempt = static_cast<int>(QueryInt(req, "attempt", job->attempt));
  int64_t after = std::max<int64_t>(0, QueryInt(req, "after", 0));
  int limit =
      static_cast<int>(std::clamp<int64_t>(QueryInt(req, "limit", kLogPage), 1, kLogPageMax));
  auto lines = deps.store->GetLogLines(job_id, attempt, after, limit);
  if (!lines.ok()) return ErrorResponse(lines.status());
  json::array arr;
  int64_t last = after;
  for (const auto& l : *lines) {
    arr.push_back(LogLineJson(l));
    last = l.seq;
  }
  bool done = store::IsTerminal(job->state) || attempt != job->attempt;
  return JsonOk(json::object{{"job_id", job_id},
                             {"attempt", attempt},
                             {"lines", std::move(arr)},
                             {"last_seq", last},
                             {"finished", done && static_cast<int>(lines->size()) < limit}});
}

Response ApiJobLogText(const DashboardDeps& deps, int64_t job_id, const Request& req) {
  auto job = deps.store->GetJob(job_id);
  if (!job.ok()) return ErrorResponse(job.status());
  int attempt = static_cast<int>(QueryInt(req, "attempt", job->attempt));
  std::string text;
  int64_t after = 0;
  while (after < kLogTextMaxLines) {
    auto lines = deps.store->GetLogLines(job_id, attempt, after, kLogPageMax);
    if (!lines.ok()) return ErrorResponse(lines.status());
    for (const auto& l : *lines) text += l.text + "\n";
    if (static_cast<int>(lines->size()) < kLogPageMax) break;
    after = lines->back().seq;
  }
  Response r = TextResponse(200, std::move(text));
  r.headers.emplace_back("Content-Disposition", "attachment; filename=\"job-" +
                                                    std::to_string(job_id) + "-attempt-" +
                                                    std::to_string(attempt) + ".log\"");
  return r;
}

}  // namespace farm::http
