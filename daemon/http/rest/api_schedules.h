// The dashboard's schedule routes (/api/v1/schedules...): the schedules with their next fire
// time and last run, one schedule with its recent runs, creating and deleting schedules,
// and the pause, resume and run-now actions. Reads go through the store; every change goes
// through builds::ScheduleControl, as the gRPC handlers' do (503 where farmd made none):
// a POST names its principal (api.h, Caller), needs a submitter token and changes only a
// schedule that principal created, unless it is an admin's; creating claims the recipe's
// name as a submitted build does; creating and run-now each take a submission from the
// principal's quota (429 past it); each is recorded in the audit log. The build request a
// schedule stores (recipe text, source URL, patches) is never written out.
// Thread-safe: the functions keep no state; none throws.
#ifndef FARM_DAEMON_HTTP_REST_API_SCHEDULES_H_
#define FARM_DAEMON_HTTP_REST_API_SCHEDULES_H_

#include <cstdint>
#include <string_view>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// Default and largest number of runs GET /api/v1/schedules/{id}?runs=N lists.
inline constexpr int kDefaultScheduleRuns = 20;
inline constexpr int kMaxScheduleRuns = 200;

// Answers /api/v1/schedules and /api/v1/schedules/{id}[/pause|/resume|/run-now|/delete];
// `rest` is the path after "/api/v1/schedules". 400 for an id that is not a positive
// integer, 404 for an unknown schedule or route, 405 for a wrong method.
Response DispatchSchedules(const DashboardDeps& deps, const Request& req, std::string_view rest);

// GET /api/v1/schedules: {"now", "schedules": [...]}, each with its last run (or null).
Response ApiSchedules(const DashboardDeps& deps);
// GET /api/v1/schedules/{id}?runs=N: the schedule plus "runs" (newest first).
Response ApiSchedule(const DashboardDeps& deps, int64_t id, int runs);
// POST /api/v1/schedules with a JSON object: "recipe_yaml" (required), "cron" (required),
// "name", "time_zone" (default UTC), "missed_run_policy" ("skip" or "once"),
// "concurrency_policy" ("skip" or "allow"), "paused". The bearer token's name is recorded
// as the creator. 201 with the schedule as GET answers it; 400 naming the field, or the
// recipe's or cron expression's error with its position; 403 for a recipe name another
// principal owns.
Response ApiCreateSchedule(const DashboardDeps& deps, const auth::Principal& who,
                           const Request& req);
// POST /api/v1/schedules/{id}/delete: removes the schedule (its runs and builds stay).
// Answers {"deleted": id}.
Response ApiDeleteSchedule(const DashboardDeps& deps, const auth::Principal& who, int64_t id);
// POST /api/v1/schedules/{id}/pause and /resume. A resumed schedule fires next at the
// first cron time after now (times passed while paused are not missed runs). Answers with
// the schedule as GET does.
Response ApiPauseSchedule(const DashboardDeps& deps, const auth::Principal& who, int64_t id,
                          bool paused);
// POST /api/v1/schedules/{id}/run-now?force=1: fires the schedule now without moving its
// next fire time; answers {"run": {...}, "schedule": {...}}.
Response ApiRunScheduleNow(const DashboardDeps& deps, const auth::Principal& who, int64_t id,
                           bool force);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_API_SCHEDULES_H_
