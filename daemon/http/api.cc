#include "daemon/http/api.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "common/clock.h"
#include "daemon/http/json_util.h"
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

Response Json(const json::value& v) { return JsonResponse(200, json::serialize(v)); }

int64_t QueryInt(const Request& req, const std::string& key, int64_t fallback) {
  auto it = req.query.find(key);
  if (it == req.query.end() || it->second.empty()) return fallback;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return fallback;
  return v;
}

// Job counts by state for one build: {"total": n, "JOB_PENDING": n, ...}.
json::object CountJobs(const std::vector<store::JobRow>& jobs) {
  std::map<int, int64_t> counts;
  for (const auto& j : jobs) counts[j.state]++;
  json::object out{{"total", static_cast<int64_t>(jobs.size())}};
  for (int s = store::kJobPending; s <= store::kJobCancelled; ++s) out[JobStateName(s)] = counts[s];
  return out;
}

// Adds recipe_name to job objects (the overview lists jobs of many builds).
json::array JobsWithRecipe(store::Store* st, const std::vector<store::JobRow>& jobs,
                           int64_t now_ms) {
  std::map<int64_t, std::string> recipes;
  json::array out;
  for (const auto& j : jobs) {
    if (!recipes.count(j.build_id)) {
      auto b = st->GetBuild(j.build_id);
      recipes[j.build_id] = b.ok() ? b->recipe_name : "";
    }
    json::object o = JobJson(j, now_ms);
    o["recipe_name"] = recipes[j.build_id];
    out.push_back(std::move(o));
  }
  return out;
}

// Workers with the ids of the running jobs each holds.
Result<json::array> WorkersArray(const DashboardDeps& deps,
                                 const std::vector<store::JobRow>& running, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(auto workers, deps.store->ListWorkers());
  json::array out;
  for (const auto& w : workers) {
    json::object o = WorkerJson(w, now_ms);
    json::array ids;
    for (const auto& j : running) {
      if (j.worker_id == w.id) ids.push_back(j.id);
    }
    o["running_jobs"] = std::move(ids);
    out.push_back(std::move(o));
  }
  return out;
}

Result<json::object> OverviewJson(const DashboardDeps& deps) {
  int64_t now = deps.clock->NowUnixMs();
  FARM_ASSIGN_OR_RETURN(auto counts, deps.store->CountJobsByState());
  FARM_ASSIGN_OR_RETURN(auto running,
                        deps.store->ListJobsInState(store::kJobRunning, 0, kOverviewRunning));
  FARM_ASSIGN_OR_RETURN(auto failed,
                        deps.store->ListJobsInState(store::kJobFailed, 0, kOverviewFailures));
  FARM_ASSIGN_OR_RETURN(auto workers, WorkersArray(deps, running, now));
  json::object by_state;
  for (int s = store::kJobPending; s <= store::kJobCancelled; ++s) {
    by_state[JobStateName(s)] = counts[static_cast<size_t>(s)];
  }
  return json::object{{"now", now},
                      {"queue_depth", counts[store::kJobPending]},
                      {"jobs_by_state", std::move(by_state)},
                      {"running", JobsWithRecipe(deps.store, running, now)},
                      {"recent_failures", JobsWithRecipe(deps.store, failed, now)},
                      {"workers", std::move(workers)}};
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
  return r.ok() ? Json(r.value()) : ErrorResponse(r.status());
}

Response ApiBuilds(const DashboardDeps& deps, const Request& req) {
  int64_t before = std::max<int64_t>(0, QueryInt(req, "before", 0));
  int limit = static_cast<int>(
      std::clamp<int64_t>(QueryInt(req, "limit", kDefaultPageSize), 1, kMaxPageSize));
  // One row more than asked tells whether another page exists.
  auto builds = deps.store->ListBuilds(before, limit + 1);
  if (!builds.ok()) return ErrorResponse(builds.status());
  bool more = static_cast<int>(builds->size()) > limit;
  if (more) builds->resize(static_cast<size_t>(limit));
  json::array items;
  for (const auto& b : *builds) {
    json::object o = BuildJson(b);
    auto jobs = deps.store->ListJobs(b.id);
    if (!jobs.ok()) return ErrorResponse(jobs.status());
    o["jobs"] = CountJobs(*jobs);
    auto pubs = deps.store->ListPublications(b.id);
    if (!pubs.ok()) return ErrorResponse(pubs.status());
    o["publishing"] = PublishingSummary(*pubs);
    items.push_back(std::move(o));
  }
  int64_t next = more && !builds->empty() ? builds->back().id : 0;
  return Json(json::object{{"builds", std::move(items)}, {"next_before", next}});
}

Response ApiBuild(const DashboardDeps& deps, int64_t build_id) {
  auto build = deps.store->GetBuild(build_id);
  if (!build.ok()) return ErrorResponse(build.status());
  auto jobs = deps.store->ListJobs(build_id);
  if (!jobs.ok()) return ErrorResponse(jobs.status());
  int64_t now = deps.clock->NowUnixMs();
  json::object o = BuildJson(*build);
  auto recipe = model::ParseBlob<farm::v1::Recipe>(build->recipe);
  o["recipe_version"] = recipe.version();
  o["recipe_yaml"] = recipe.yaml();
  o["matrix"] = ProtoToJson(recipe.matrix());
  // The proto must outlive the loop: a range-for over a member of a temporary reads freed
  // memory (the temporary dies before the loop body runs).
  const farm::v1::Build build_proto = model::BuildToProto(*build);
  json::array rejected;
  for (const auto& cell : build_proto.rejected_cells()) rejected.push_back(json::value(cell));
  o["rejected_cells"] = std::move(rejected);
  json::array arr;
  for (const auto& j : *jobs) arr.push_back(JobJson(j, now));
  o["jobs"] = std::move(arr);
  o["job_counts"] = CountJobs(*jobs);
  auto pubs = deps.store->ListPublications(build_id);
  if (!pubs.ok()) return ErrorResponse(pubs.status());
  json::array publications;
  for (const auto& p : *pubs) publications.push_back(PublicationJson(p));
  o["publications"] = std::move(publications);
  o["publishing"] = PublishingSummary(*pubs);
  o["now"] = now;
  return Json(o);
}

Response ApiWorkers(const DashboardDeps& deps) {
  int64_t now = deps.clock->NowUnixMs();
  auto running = deps.store->ListJobsInState(store::kJobRunning, 0, 10000);
  if (!running.ok()) return ErrorResponse(running.status());
  auto workers = WorkersArray(deps, *running, now);
  if (!workers.ok()) return ErrorResponse(workers.status());
  return Json(json::object{{"now", now}, {"workers", std::move(workers.value())}});
}

Response ApiCancelBuild(const DashboardDeps& deps, int64_t build_id, const std::string& who) {
  auto build = deps.store->GetBuild(build_id);
  if (!build.ok()) return ErrorResponse(build.status());
  Status s = deps.store->CancelBuild(build_id, deps.clock->NowUnixMs(), who);
  if (!s.ok()) return ErrorResponse(s);
  return ApiBuild(deps, build_id);
}

Response ApiRetryJob(const DashboardDeps& deps, int64_t job_id) {
  Status s = deps.store->RetryJob(job_id, deps.clock->NowUnixMs());
  if (!s.ok()) return ErrorResponse(s);
  return ApiJob(deps, job_id);
}

Response ApiDrainWorker(const DashboardDeps& deps, const std::string& worker_id, bool drain) {
  Status s = deps.store->SetDrainRequested(worker_id, drain);
  if (!s.ok()) return ErrorResponse(s);
  return ApiWorkers(deps);
}

Response ApiChart(const DashboardDeps& deps) {
  auto rows = deps.store->ListJobTimings(2000);
  if (!rows.ok()) return ErrorResponse(rows.status());
  std::map<std::string, json::array> series;
  for (auto it = rows->rbegin(); it != rows->rend(); ++it) {
    series[it->recipe_name].push_back(json::object{
        {"job_id", it->job_id},
        {"finished_ms", it->finished_ms},
        {"duration_ms", it->finished_ms - it->started_ms},
        {"state", JobStateName(it->state)}});
  }
  json::array out;
  for (auto& [name, points] : series) {
    out.push_back(json::object{{"recipe", name}, {"points", std::move(points)}});
  }
  return Json(json::object{{"series", std::move(out)}});
}

Response ApiJobLog(const DashboardDeps& deps, int64_t job_id, const Request& req) {
  auto job = deps.store->GetJob(job_id);
  if (!job.ok()) return ErrorResponse(job.status());
  int attempt = static_cast<int>(QueryInt(req, "attempt", job->attempt));
  int64_t after = std::max<int64_t>(0, QueryInt(req, "after", 0));
  int limit = static_cast<int>(std::clamp<int64_t>(QueryInt(req, "limit", kLogPage), 1,
                                                   kLogPageMax));
  auto lines = deps.store->GetLogLines(job_id, attempt, after, limit);
  if (!lines.ok()) return ErrorResponse(lines.status());
  json::array arr;
  int64_t last = after;
  for (const auto& l : *lines) {
    arr.push_back(json::object{{"seq", l.seq}, {"stream", l.stream}, {"text", l.text},
                               {"time_ms", l.time_ms}});
    last = l.seq;
  }
  bool done = store::IsTerminal(job->state) || attempt != job->attempt;
  return Json(json::object{{"job_id", job_id}, {"attempt", attempt}, {"lines", std::move(arr)},
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
  r.headers.emplace_back("Content-Disposition",
                         "attachment; filename=\"job-" + std::to_string(job_id) + "-attempt-" +
                             std::to_string(attempt) + ".log\"");
  return r;
}

}  // namespace farm::http
