// The dashboard's JSON API (/api/v1/...), the page's only data source. Each handler is a
// pure function of the request and the store's read queries; cancel, retry and drain
// translate to builds::Control, which the gRPC API calls too. None throws. Authentication
// is checked by the router beforehand. Thread-safe: handlers keep no state.
#ifndef FARM_DAEMON_HTTP_REST_API_H_
#define FARM_DAEMON_HTTP_REST_API_H_

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// Default and largest page sizes of /api/v1/builds.
inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxPageSize = 500;

// GET /api/v1/overview: queue depth, running jobs, recent failures, workers.
Response ApiOverview(const DashboardDeps& deps);
// GET /api/v1/builds?before=ID&limit=N[&recipe=&state=&submitter=&worker=]: newest first,
// only the builds matching every given filter; next_before is 0 on the last page.
Response ApiBuilds(const DashboardDeps& deps, const Request& req);
// GET /api/v1/builds/{id}: the build, its recipe, its jobs with timings, why they wait or
// failed and how far they are, its wheels and their publications. `index_include_pending`
// is the index's rule, for each wheel's "indexed".
Response ApiBuild(const DashboardDeps& deps, int64_t build_id, bool index_include_pending);
// GET /api/v1/jobs/{id}: the job, attempts, artifacts (manifest, validation, variant).
Response ApiJob(const DashboardDeps& deps, int64_t job_id, bool index_include_pending);
// GET /api/v1/jobs/{id}/log?after=SEQ&attempt=N&limit=N: a page of log lines.
Response ApiJobLog(const DashboardDeps& deps, int64_t job_id, const Request& req);
// GET /api/v1/jobs/{id}/log.txt: the whole log of an attempt as text (download).
Response ApiJobLogText(const DashboardDeps& deps, int64_t job_id, const Request& req);
// GET /api/v1/publications?limit=N: publication rows of every build, failed first, with
// their build's recipe, and the count per state.
Response ApiPublications(const DashboardDeps& deps, const Request& req);
// GET /api/v1/workers.
Response ApiWorkers(const DashboardDeps& deps);
// GET /api/v1/chart: durations of recent finished jobs per recipe.
Response ApiChart(const DashboardDeps& deps);
// Mutations (docs/security.md, "Who may change what"): each is made by a principal (Actor),
// refused with 403 naming the owner unless the principal owns what it changes or is an
// admin, and recorded in the audit log, refusals included.
//
// The one access check of the HTTP side (reads go through Router::Authorize, which calls
// it unless reads are public): the request's token, whose role must satisfy `need`. 401
// without a valid token (not recorded: there is no principal); a role too weak is 403,
// recorded with `entry`.
Result<auth::Principal> Actor(const DashboardDeps& deps, const Request& req, auth::Need need,
                              const audit::Entry& entry);
// The same check for a read: a refusal is not recorded.
Result<auth::Principal> Actor(const DashboardDeps& deps, const Request& req, auth::Need need);
// The request's principal, its role not checked: for the mutations whose use case checks
// it and records the request (builds::Control). 401 without a valid token.
Result<auth::Principal> Caller(const DashboardDeps& deps, const Request& req);
// POST /api/v1/builds/{id}/cancel by `who` (builds::Control::CancelBuild); 409 for an ended
// build. Answers with the build as ApiBuild does.
Response ApiCancelBuild(const DashboardDeps& deps, int64_t build_id, const auth::Principal& who,
                        bool index_include_pending);
// Queues a failed or cancelled job again (Store::RetryJob); answers with the job.
Response ApiRetryJob(const DashboardDeps& deps, int64_t job_id, const auth::Principal& who,
                     bool index_include_pending);
// Sets or clears the drain request of a worker named by its id or its unique name (`who`
// must be an admin); answers with the workers.
Response ApiDrainWorker(const DashboardDeps& deps, const auth::Principal& who,
                        const std::string& worker, bool drain);
// GET /api/v1/audit?limit=N&principal=P&before=ID (admin): the audit log, newest first,
// {"records": [...], "next_before": id or 0}.
Response ApiAudit(const DashboardDeps& deps, const Request& req);

// The index variant of a matrix cell: "cu130", "cu128-torch2.8"; "cpu" without CUDA.
std::string VariantOf(const std::string& cuda, const std::string& torch);

// Parses a decimal id; 0 when `s` is not a positive integer.
int64_t ParseId(std::string_view s);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_API_H_
