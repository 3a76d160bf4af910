#include "daemon/http/rest/api_schedules.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <regex>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/builds/audited.h"
#include "daemon/builds/schedule_control.h"
#include "daemon/cron/time_zone.h"
#include "daemon/cron/upstream_watch.h"
#include "daemon/cron/watch_state.h"
#include "daemon/http/rest/api.h"
#include "daemon/http/rest/json_util.h"
#include "farm/v1/client.pb.h"

namespace farm::http {

namespace json = boost::json;

namespace {

constexpr int kListRuns = 1;

// The schedule use cases (builds::ScheduleControl); 503 where farmd made none.
Result<builds::ScheduleControl*> Schedules(const DashboardDeps& deps) {
  if (deps.schedule_control == nullptr) return Status::Unavailable("this farmd runs no schedules");
  return deps.schedule_control;
}

// A run's detail can carry a git error naming the repository: keep credentials in a URL
// ("https://user:secret@host/...") and registered secrets out of the page.
std::string SafeText(const std::string& text) {
  static const std::regex kUserInfo(R"(([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@)");
  return log::Redact(std::regex_replace(text, kUserInfo, "$1[REDACTED]@"));
}

bool IsSkipOrFailure(int outcome) {
  return outcome == farm::v1::RUN_SKIPPED_UNCHANGED || outcome == farm::v1::RUN_SKIPPED_RUNNING ||
         outcome == farm::v1::RUN_SKIPPED_MISSED || outcome == farm::v1::RUN_FAILED;
}

json::object RunJson(const store::ScheduleRunRow& r) {
  std::string detail = SafeText(r.detail);
  return json::object{
      {"id", r.id},
      {"schedule_id", r.schedule_id},
      {"trigger",
       farm::v1::ScheduleTrigger_Name(static_cast<farm::v1::ScheduleTrigger>(r.trigger))},
      {"outcome",
       farm::v1::ScheduleRunOutcome_Name(static_cast<farm::v1::ScheduleRunOutcome>(r.outcome))},
      {"fire_time", FormatRfc3339(r.fire_ms)},
      {"created_at", FormatRfc3339(r.created_ms)},
      {"build_id", r.build_id},
      {"build_state", r.build_id > 0 ? json::value(BuildStateName(r.build_state)) : nullptr},
      {"build_url",
       r.build_id > 0 ? json::value("#/build/" + std::to_string(r.build_id)) : nullptr},
      {"build_api",
       r.build_id > 0 ? json::value("/api/v1/builds/" + std::to_string(r.build_id)) : nullptr},
      {"resolved_commit", r.resolved_commit},
      {"upstream_time", r.upstream_ms > 0 ? json::value(FormatRfc3339(r.upstream_ms)) : nullptr},
      {"detail", detail},
      {"skipped_reason", IsSkipOrFailure(r.outcome) ? json::value(detail) : nullptr}};
}

// The schedule without its runs. A paused schedule has no next fire time: resuming picks
// one from the time of resuming.
json::object ScheduleJson(const store::ScheduleRow& row) {
  json::object o{
      {"id", row.id},
      {"name", row.name},
      {"recipe_name", row.recipe_name},
      {"cron", row.cron},
      {"time_zone", row.time_zone},
      {"missed_run_policy",
       farm::v1::MissedRunPolicy_Name(static_cast<farm::v1::MissedRunPolicy>(row.missed_policy))},
      {"concurrency_policy", farm::v1::ConcurrencyPolicy_Name(
                                 static_cast<farm::v1::ConcurrencyPolicy>(row.concurrency_policy))},
      {"paused", row.paused},
      {"next_fire_time", nullptr},
      {"next_fire_unix", nullptr},
      {"next_fire_local", nullptr},
      {"created_by", row.created_by},
      {"owner", row.created_by},
      {"created_at", FormatRfc3339(row.created_ms)},
      {"watch", nullptr},
      {"watch_status", nullptr}};
  if (farm::v1::UpstreamWatch watch; !row.watch.empty() && watch.ParseFromString(row.watch)) {
    o["watch"] = cron::DescribeWatch(watch);
    o["watch_status"] = cron::DescribeWatchState(cron::WatchState::Parse(row.watch_state));
  }
  if (!row.paused) {
    o["next_fire_time"] = FormatRfc3339(row.next_fire_ms);
    o["next_fire_unix"] = row.next_fire_ms / 1000;
    auto zone = cron::TimeZone::Load(row.time_zone);
    if (zone.ok()) o["next_fire_local"] = zone->FormatLocal(row.next_fire_ms / 1000);
  }
  return o;
}

Result<json::object> ScheduleWithRuns(const DashboardDeps& deps, const store::ScheduleRow& row,
                                      int runs) {
  FARM_ASSIGN_OR_RETURN(auto recent, deps.store->ListScheduleRuns(row.id, runs));
  json::object o = ScheduleJson(row);
  o["last_run"] = recent.empty() ? json::value(nullptr) : json::value(RunJson(recent.front()));
  if (runs > kListRuns) {
    json::array arr;
    for (const auto& r : recent) arr.push_back(RunJson(r));
    o["runs"] = std::move(arr);
  }
  return o;
}

Result<json::object> LoadSchedule(const DashboardDeps& deps, int64_t id, int runs) {
  FARM_ASSIGN_OR_RETURN(auto row, deps.store->GetSchedule(id));
  FARM_ASSIGN_OR_RETURN(json::object o, ScheduleWithRuns(deps, row, runs));
  o["now"] = deps.clock->NowUnixMs();
  return o;
}

int QueryRuns(const Request& req) {
  auto it = req.query.find("runs");
  int64_t v = kDefaultScheduleRuns;
  if (it != req.query.end()) {
    const std::string& s = it->second;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) v = kDefaultScheduleRuns;
  }
  return static_cast<int>(std::clamp<int64_t>(v, 2, kMaxScheduleRuns));
}

bool QueryFlag(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it != req.query.end() && (it->second == "1" || it->second == "true");
}

Result<std::string> StringField(const json::object& o, const char* key, bool required) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (required) return Status::InvalidArgument(std::string("\"") + key + "\" is required");
    return std::string();
  }
  if (!v->is_string())
    return Status::InvalidArgument(std::string("\"") + key + "\" must be a string");
  return std::string(v->as_string());
}

// False for "skip" (the default), true for `other`, each also under the enum name the
// API answers with and the word farmctl takes (`other_alias`).
Result<bool> PolicyField(const json::object& o, const char* key, const std::string& other,
                         const std::string& other_alias, const std::string& skip_enum,
                         const std::string& other_enum) {
  FARM_ASSIGN_OR_RETURN(std::string v, StringField(o, key, false));
  if (v.empty() || v == "skip" || v == skip_enum) return false;
  if (v == other || v == other_alias || v == other_enum) return true;
  return Status::InvalidArgument(std::string("\"") + key + "\" must be \"skip\" or \"" + other +
                                 "\", got \"" + v + "\"");
}

Result<farm::v1::CreateScheduleRequest> ParseCreateRequest(const std::string& body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) {
    return Status::InvalidArgument("the body must be a JSON object (" +
                                   (ec ? ec.message() : std::string("not an object")) + ")");
  }
  const json::object& o = doc.as_object();
  farm::v1::CreateScheduleRequest req;
  FARM_ASSIGN_OR_RETURN(*req.mutable_build()->mutable_recipe_yaml(),
                        StringField(o, "recipe_yaml", true));
  req.mutable_build()->set_recipe_path("recipe.yaml");
  FARM_ASSIGN_OR_RETURN(*req.mutable_cron(), StringField(o, "cron", true));
  FARM_ASSIGN_OR_RETURN(*req.mutable_name(), StringField(o, "name", false));
  FARM_ASSIGN_OR_RETURN(*req.mutable_time_zone(), StringField(o, "time_zone", false));
  FARM_ASSIGN_OR_RETURN(bool once, PolicyField(o, "missed_run_policy", "once", "run_once",
                                               "MISSED_SKIP", "MISSED_RUN_ONCE"));
  req.set_missed_run_policy(once ? farm::v1::MISSED_RUN_ONCE : farm::v1::MISSED_SKIP);
  FARM_ASSIGN_OR_RETURN(bool allow, PolicyField(o, "concurrency_policy", "allow", "allow",
                                                "CONCURRENCY_SKIP", "CONCURRENCY_ALLOW"));
  req.set_concurrency_policy(allow ? farm::v1::CONCURRENCY_ALLOW : farm::v1::CONCURRENCY_SKIP);
  if (const json::value* p = o.if_contains("paused"); p != nullptr && !p->is_null()) {
    if (!p->is_bool()) return Status::InvalidArgument("\"paused\" must be true or false");
    req.set_paused(p->as_bool());
  }
  return req;
}

}  // namespace

Response ApiCreateSchedule(const DashboardDeps& deps, const auth::Principal& who,
                           const Request& req) {
  auto parsed = ParseCreateRequest(req.body);
  if (!parsed.ok()) {
    // Refused and recorded as the use case refuses and records, the role checked first.
    audit::Entry entry{audit::Action::kScheduleCreate, "schedule"};
    return ErrorResponse(builds::AuditedAs(deps.audit, who, auth::Need::kSubmitter, entry,
                                           [&] { return parsed.status(); }));
  }
  auto schedules = Schedules(deps);
  if (!schedules.ok()) return ErrorResponse(schedules.status());
  auto row = (*schedules)->Create(who, *parsed);
  if (!row.ok()) return ErrorResponse(row.status());
  Response r = ApiSchedule(deps, row->id, kDefaultScheduleRuns);
  if (r.status == 200) r.status = 201;
  return r;
}

Response ApiDeleteSchedule(const DashboardDeps& deps, const auth::Principal& who, int64_t id) {
  auto schedules = Schedules(deps);
  Status s = schedules.ok() ? (*schedules)->Delete(who, id) : schedules.status();
  if (!s.ok()) return ErrorResponse(s);
  return JsonOk(json::object{{"deleted", id}});
}

Response ApiSchedules(const DashboardDeps& deps) {
  auto rows = deps.store->ListSchedules();
  if (!rows.ok()) return ErrorResponse(rows.status());
  json::array out;
  for (const auto& row : *rows) {
    auto o = ScheduleWithRuns(deps, row, kListRuns);
    if (!o.ok()) return ErrorResponse(o.status());
    out.push_back(std::move(o.value()));
  }
  return JsonOk(json::object{{"now", deps.clock->NowUnixMs()}, {"schedules", std::move(out)}});
}

Response ApiSchedule(const DashboardDeps& deps, int64_t id, int runs) {
  auto o = LoadSchedule(deps, id, std::clamp(runs, 2, kMaxScheduleRuns));
  return o.ok() ? JsonOk(o.value()) : ErrorResponse(o.status());
}

Response ApiPauseSchedule(const DashboardDeps& deps, const auth::Principal& who, int64_t id,
                          bool paused) {
  auto schedules = Schedules(deps);
  Status s =
      schedules.ok() ? (*schedules)->SetPaused(who, id, paused).status() : schedules.status();
  if (!s.ok()) return ErrorResponse(s);
  return ApiSchedule(deps, id, kDefaultScheduleRuns);
}

Response ApiRunScheduleNow(const DashboardDeps& deps, const auth::Principal& who, int64_t id,
                           bool force) {
  auto schedules = Schedules(deps);
  auto run = schedules.ok() ? (*schedules)->RunNow(who, id, force) : schedules.status();
  if (!run.ok()) return ErrorResponse(run.status());
  auto schedule = LoadSchedule(deps, id, kDefaultScheduleRuns);
  if (!schedule.ok()) return ErrorResponse(schedule.status());
  // The schedule's newest run is this one, with its build's state filled in by the query.
  json::value shown = RunJson(run.value());
  const json::array& runs = schedule->at("runs").as_array();
  if (!runs.empty() && runs.front().at("id").as_int64() == run->id) shown = runs.front();
  return JsonOk(json::object{{"run", std::move(shown)}, {"schedule", std::move(schedule.value())}});
}

Response DispatchSchedules(const DashboardDeps& deps, const Request& req, std::string_view rest) {
  if (rest.empty() || rest == "/") {
    if (req.method == "POST") {
      auto who = Caller(deps, req);
      return who.ok() ? ApiCreateSchedule(deps, *who, req) : ErrorResponse(who.status());
    }
    return IsRead(req) ? ApiSchedules(deps) : MethodNotAllowed("GET, HEAD, POST");
  }
  if (rest.front() != '/')
    return ErrorResponse(Status::NotFound("no API route schedules" + std::string(rest)));
  rest.remove_prefix(1);
  size_t slash = rest.find('/');
  std::string_view id_text = rest.substr(0, slash);
  std::string_view action = slash == rest.npos ? std::string_view() : rest.substr(slash + 1);
  int64_t id = ParseId(id_text);
  if (id == 0) {
    return ErrorResponse(Status::InvalidArgument("schedule id must be a positive integer"));
  }
  if (action.empty()) {
    return IsRead(req) ? ApiSchedule(deps, id, QueryRuns(req)) : MethodNotAllowed("GET, HEAD");
  }
  if (action != "pause" && action != "resume" && action != "run-now" && action != "delete") {
    return ErrorResponse(Status::NotFound("no schedule route " + std::string(action)));
  }
  if (req.method != "POST") return MethodNotAllowed("POST");
  // The use case checks the role and records the request (builds::ScheduleControl).
  auto who = Caller(deps, req);
  if (!who.ok()) return ErrorResponse(who.status());
  if (action == "run-now") return ApiRunScheduleNow(deps, *who, id, QueryFlag(req, "force"));
  if (action == "delete") return ApiDeleteSchedule(deps, *who, id);
  return ApiPauseSchedule(deps, *who, id, action == "pause");
}

}  // namespace farm::http
