// Validation jobs (docs/gpu-validation.md, "Validation when the GPU arrives"): the wheels of a
// build job whose validation waits for hardware are validated again, by a job of kind
// JOB_VALIDATE, once a worker with a GPU they serve is registered; `farmctl validate
// ARTIFACT` asks for it by hand. The job's report is stored with the wheels (and with copies
// of the same bytes that wait too), so the index and the publisher act on it.
//
// Functions take the store and clock they use; Revalidator is called from one thread
// (farmd's sweeper).
#ifndef FARM_DAEMON_SCHED_REVALIDATION_H_
#define FARM_DAEMON_SCHED_REVALIDATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/store/store.h"

namespace farm::sched {

// The validation job (not stored yet) of build job `job`'s attempt `attempt`, in its cell:
// it needs a GPU every wheel of that attempt with device code runs on, and for a
// provisioned recipe accepts a worker that provisions.
// (`farmctl validate ARTIFACT` queues one through daemon/builds/control.h.)
Result<store::JobRow> ValidationJobFor(store::ArtifactStore& artifacts, const store::JobRow& job,
                                       int attempt, int64_t now_ms, int max_attempts);

class Revalidator {
 public:
  Revalidator(store::Store* store, const Clock* clock, int max_attempts)
      : store_(store), clock_(clock), max_attempts_(max_attempts) {}

  // One pass, when the store changed since the last one: records the validation state of
  // artifacts stored before it had a column, then queues a validation job for each attempt
  // whose wheels wait for hardware when a worker that may take jobs can run it (a GPU they
  // run on, the cell's platform and Python) and has not validated them before, and no
  // validation job of theirs is pending or running. On success returns how many jobs it
  // queued.
  Result<int> RunOnce();

 private:
  Status RecordUnknownStates();

  store::Store* store_;
  const Clock* clock_;
  int max_attempts_;
  int64_t seen_generation_ = -1;
};

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_REVALIDATION_H_
