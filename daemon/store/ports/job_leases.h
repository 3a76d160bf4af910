// JobLeases: the life of a job on a worker: leasing pending jobs, renewing and expiring
// leases, progress, completion, and giving jobs back when a worker is lost or returns.
#ifndef FARM_DAEMON_STORE_PORTS_JOB_LEASES_H_
#define FARM_DAEMON_STORE_PORTS_JOB_LEASES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

// Live figures of a running attempt from its worker's heartbeat.
struct ProgressReport {
  int64_t job_id = 0;
  int attempt = 0;
  std::string worker_id;
  int64_t units_done = 0;
  int64_t units_total = 0;
  int64_t peak_rss_bytes = 0;
};

// How a worker's report ends an attempt.
struct CompletionReport {
  int64_t job_id = 0;
  int attempt = 0;
  std::string worker_id;
  int cause = kCauseCompleted;
  int exit_code = 0;
  std::string detail;
  int64_t peak_rss_bytes = 0;
  int max_attempts = 1;  // infrastructure failures are retried below this
  bool retry_build_failures = false;
  int64_t retry_not_before_ms = 0;
  // Serialized farm.v1.ValidationReport of the attempt's wheels; stored with each of its
  // artifacts in the same transaction. Empty: the artifacts keep what they have. For a
  // validation job it is stored with the artifacts of its target attempt instead, and with
  // every other artifact of the same bytes (sha256) whose validation waits for hardware.
  std::string validation;
  int validation_state = kValidationUnspecified;  // the report's state
  int64_t cache_hits = -1;                        // compile cache; -1: the build ran without it
  int64_t cache_misses = -1;
  // Validation jobs (kJobValidate, each with its target, attempt and cell) queued in the
  // same transaction when the attempt succeeds: a stable-ABI build's validations in the
  // other torches of its matrix. One per target attempt and cell: a row whose cell already
  // has a validation job of that attempt (in any state) is skipped.
  std::vector<JobRow> on_success;
};

// One lease the dispatcher asks the store to write: job `job_id` to worker `worker_id`.
struct LeaseRequest {
  int64_t job_id = 0;
  std::string worker_id;
};

// Returns "" when `worker` may run `job`, else the reason it may not. Called inside the
// acquire transaction, so it must not call back into the Store.
using PlacementFn = std::function<std::string(const JobRow& job)>;

class JobLeases {
 public:
  virtual ~JobLeases() = default;

  // Leases the first pending job (priority desc, FIFO) for which `placeable` returns "":
  // starts a new attempt held by `worker_id` until now+lease_ms. nullopt when none fits.
  virtual Result<std::optional<JobRow>> AcquireJob(const std::string& worker_id, int64_t now_ms,
                                                   int64_t lease_ms,
                                                   const PlacementFn& placeable) = 0;
  // Ids of the jobs leasable at `now_ms` (pending, not-before passed, so no held job) in
  // dispatch order (priority desc, id asc), at most `limit`. Cheap: the in-memory
  // dispatcher diffs it against the jobs it already holds.
  virtual Result<std::vector<int64_t>> ListLeasableJobIds(int64_t now_ms, int limit) = 0;
  // Leases every request whose job is still leasable at `now_ms`, all in one transaction
  // (a new attempt held until now+lease_ms, as AcquireJob). Returns, per request in order,
  // the leased job or nullopt when it no longer was leasable (leased, cancelled, held).
  virtual Result<std::vector<std::optional<JobRow>>> LeaseJobs(
      const std::vector<LeaseRequest>& requests, int64_t now_ms, int64_t lease_ms) = 0;
  // The running jobs `worker_id` holds whose cancellation was requested (a read; what
  // RenewLeases returns, without renewing).
  virtual Result<std::vector<JobRow>> CancelRequestedJobs(const std::string& worker_id) = 0;
  // Extends the leases of the running jobs `worker_id` holds; returns the ids of those
  // whose cancellation was requested.
  virtual Result<std::vector<JobRow>> RenewLeases(const std::string& worker_id, int64_t now_ms,
                                                  int64_t lease_ms) = 0;
  // Ends the attempt. FailedPrecondition when the attempt is not the job's current one
  // or `worker_id` does not hold it; repeating the report of an ended attempt is OK.
  // Returns the job's state afterwards.
  virtual Result<int> CompleteAttempt(const CompletionReport& report, int64_t now_ms) = 0;
  // Ends every attempt whose lease expired before now: the job is requeued (cause lost
  // worker) while below its max_attempts, else failed, or cancelled when cancellation was
  // requested. Returns the affected job ids.
  virtual Result<std::vector<int64_t>> ExpireLeases(int64_t now_ms) = 0;
  // Gives every running job a full lease from now. farmd calls it at start so workers that
  // kept building while it was down have time to reconnect before their jobs are requeued.
  virtual Status ExtendRunningLeases(int64_t now_ms, int64_t lease_ms) = 0;
  // Gives `worker_id` back attempt `attempt` of a job that was requeued after its lease
  // expired but not leased to anyone since (a worker back from a network cut whose build
  // kept running). Returns false, changing nothing, when the job moved on.
  virtual Result<bool> ReattachAttempt(int64_t job_id, int attempt, const std::string& worker_id,
                                       int64_t now_ms, int64_t lease_ms) = 0;
  // Ends the attempts `worker_id` holds except the jobs in `keep`, as if their leases had
  // expired (cause lost worker, `detail`). Used when a worker restarts or stops reporting a
  // job it was given. Returns the affected job ids.
  virtual Result<std::vector<int64_t>> ReleaseWorkerJobs(const std::string& worker_id,
                                                         const std::vector<int64_t>& keep,
                                                         const std::string& detail,
                                                         int64_t now_ms) = 0;
  // Records a running attempt's live progress (units, peak RSS; the peak never falls)
  // when `worker_id` holds it; anything else is ignored. Returns whether it changed a row.
  virtual Result<bool> RecordProgress(const ProgressReport& report) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_JOB_LEASES_H_
