// What the dashboard shows of jobs besides their rows: the names of their workers, why a
// pending job waits (sched::ExplainWaiting, the same sentence farmctl prints), how far a
// running job is and how long it should take, what made a failed job fail, and whether a
// build can go on at all. Pure functions of the store's reads; thread-safe.
#ifndef FARM_DAEMON_HTTP_REST_JOB_VIEWS_H_
#define FARM_DAEMON_HTTP_REST_JOB_VIEWS_H_

#include <boost/json.hpp>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/sched/waiting.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::http {

// The workers as one request sees them, read once.
struct FleetView {
  int64_t now_ms = 0;
  std::map<std::string, std::string> names;  // worker id -> name
  std::vector<sched::FleetWorker> fleet;
  std::vector<sched::PeerWorker> peers;

  // The worker's name, or its id when it is not (or no longer) registered.
  std::string NameOf(const std::string& worker_id) const;
};
Result<FleetView> ReadFleet(const DashboardDeps& deps);

// Explains pending jobs against one FleetView, once per distinct cell and backoff: a page
// of many builds of the same matrix costs one explanation per cell. `max_workers`: how many
// blocked workers each job's "waiting" lists one by one before it lists them by reason
// (sched::ReasonEntries); a page of many jobs keeps it small.
class WaitingExplainer {
 public:
  explicit WaitingExplainer(const FleetView& fleet,
                            size_t max_workers = std::numeric_limits<size_t>::max())
      : fleet_(fleet), max_workers_(max_workers) {}
  const sched::Waiting& Explain(const store::JobRow& job);
  size_t max_workers() const { return max_workers_; }

 private:
  const FleetView& fleet_;
  size_t max_workers_;
  std::map<std::string, sched::Waiting> memo_;
};

// {"summary", "unplaceable", "workers": [{"id", "name", "reason"}], "able": [names]}. Past
// `max_workers` blocked workers, "workers" holds one {"name", "reason"} per reason instead
// (the name saying how many share it) and "workers_total" counts them all.
boost::json::object WaitingJson(const sched::Waiting& waiting,
                                size_t max_workers = std::numeric_limits<size_t>::max());

// JobJson plus "worker_name" and, for a pending job, "waiting".
boost::json::object JobViewJson(const store::JobRow& job, const FleetView& fleet,
                                WaitingExplainer& waiting);

// Adds "blocked" to a build object: true when it has unfinished build jobs and every one
// of them is pending and no worker can take it (the build would otherwise read "running"
// for ever; validation jobs never block a build); then also "unplaceable_jobs" (validation
// jobs included) and "blocked_reason" (the first such job's summary).
void AddBlocked(boost::json::object& build, const std::vector<store::JobRow>& jobs,
                WaitingExplainer& waiting);

// Adds to the object of an unfinished job "progress" (the running attempt's units and
// peak RSS) and "expected_ms" (the run time of the last successful build job of the same
// recipe and cell, absent without one or for a validation job). `expected` memoizes the
// latter per cell.
Status AddRunFacts(const DashboardDeps& deps, const std::string& recipe_name,
                   const store::JobRow& job, std::map<std::string, int64_t>& expected,
                   boost::json::object& out);

// Sets "ran_ms" of a job that ran more than once to the time its attempts ran, and
// "waited_ms" to the rest of its life: the backoff before a retry and the wait for a worker
// are waiting, not running (JobJson counts from the first attempt's start).
void AddAttemptTimes(const store::JobRow& job, const std::vector<store::AttemptRow>& attempts,
                     int64_t now_ms, boost::json::object& out);

// {"phase", "summary", "lines"} of a failed job: the phase its counted attempt failed in,
// the attempt's detail (or the job's error), and with `with_lines` the lines that say why
// (MeaningfulLines of the log's end; for a failed validation, each failed case with its
// numbers first), else none (lists of many jobs read no logs).
Result<boost::json::object> FailureJson(const DashboardDeps& deps, const store::JobRow& job,
                                        const std::vector<store::AttemptRow>& attempts,
                                        const farm::v1::Recipe& recipe, bool with_lines = true);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_JOB_VIEWS_H_
