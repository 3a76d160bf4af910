// Which worker may be given a job now (a worker's AcquireJob, before its poll waits in the
// dispatcher): not one that is draining, asked to drain or quarantined, nor one already
// running as many jobs as it offered (Capabilities.max_concurrent_jobs). What a worker
// may take is then the dispatcher's placement (sched/placement.h), given what the jobs it
// runs hold of a unified-memory host's RAM for GPU validation.
//
// Thread-safe: the store ports are.
#ifndef FARM_DAEMON_BUILDS_ELIGIBILITY_H_
#define FARM_DAEMON_BUILDS_ELIGIBILITY_H_

#include <optional>
#include <string>

#include "common/status.h"
#include "daemon/sched/dispatcher.h"
#include "daemon/store/ports/visits.h"
#include "daemon/store/ports/worker_store.h"

namespace farm::builds {

struct EligibilityDeps {
  store::WorkerStore* workers = nullptr;
  store::Visits* visits = nullptr;  // the reads are one visit to the store
};

// The poll of worker `worker_id` (its name, capabilities and held memory; no deadline and
// no callback yet) when it may take a job now, nullopt when it may not. NotFound for an
// unknown worker.
Result<std::optional<sched::Dispatcher::Waiter>> MayTakeJob(const EligibilityDeps& deps,
                                                            const std::string& worker_id);

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_ELIGIBILITY_H_
