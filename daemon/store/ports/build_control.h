// BuildControl: what starts and changes builds: submitting one (alone or linked to
// in-flight merges, a schedule run and required jobs), retrying a job, cancelling a
// build, and settling jobs merged onto an identical job in flight.
#ifndef FARM_DAEMON_STORE_PORTS_BUILD_CONTROL_H_
#define FARM_DAEMON_STORE_PORTS_BUILD_CONTROL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/build_graph_store.h"
#include "daemon/store/ports/job_rows.h"
#include "daemon/store/ports/schedule_store.h"

namespace farm::store {

// What CreateBuildLinked stores with a build, in the same transaction.
struct BuildLinks {
  // A job (not forced, not reused) whose build key equals a pending or running job's is
  // stored waiting on that job instead of being dispatched (ResolveMergedJobs).
  bool merge_in_flight = false;
  // Recorded with the new build's id; the schedule's next fire time is set to
  // next_fire_ms when >= 0. On success run->id and run->build_id are filled in.
  std::optional<ScheduleRunRow> run;
  int64_t next_fire_ms = -1;
  // Jobs the new build's jobs require: jobs[index] is stored held (kHeld, or kHeldForced
  // when `force`) on required_job_id, and settled in the same transaction when those
  // already ended (ResolveHeldJobs).
  struct Requirement {
    size_t index = 0;
    int64_t required_job_id = 0;
    std::string recipe_name;
    bool for_build = false;
    bool for_validation = false;
  };
  std::vector<Requirement> requirements;
  bool force = false;
  // The key of a job that consumes wheels, for those whose required jobs ended already;
  // needed with `requirements` (FailedPrecondition without it).
  InputsKeyFn inputs_key;
};

class BuildControl {
 public:
  virtual ~BuildControl() = default;

  // Inserts the build and its jobs in one transaction; fills in the ids. A job with
  // reused_from > 0 is inserted succeeded, with copies of that job's artifact rows.
  virtual Status CreateBuild(BuildRow* build, std::vector<JobRow>* jobs) = 0;
  // CreateBuild plus `links` (in-flight merges, a schedule run) in one transaction.
  virtual Status CreateBuildLinked(BuildRow* build, std::vector<JobRow>* jobs,
                                   BuildLinks* links) = 0;
  // Settles jobs waiting on another job: when that job succeeded with artifacts the
  // waiting job succeeds with copies of them (reused_from = that job); when it failed or
  // was cancelled the waiting job is released to be built itself (a failed result is
  // never reused). Returns the ids of the settled jobs.
  virtual Result<std::vector<int64_t>> ResolveMergedJobs(int64_t now_ms) = 0;
  // Queues a failed or cancelled job again as a new attempt with a fresh attempt budget;
  // its history stays. Jobs that failed because they require it (directly or through
  // others) are held again on it. FailedPrecondition for a job that is pending, running or
  // succeeded.
  virtual Status RetryJob(int64_t job_id, int64_t now_ms) = 0;
  // Cancels pending jobs now and asks the workers of running jobs to stop; `who` is
  // recorded with each job it cancels. FailedPrecondition, changing nothing, for a build
  // that already ended (succeeded, failed or cancelled).
  virtual Status CancelBuild(int64_t build_id, int64_t now_ms, const std::string& who) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_BUILD_CONTROL_H_
