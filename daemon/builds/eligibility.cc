#include "daemon/builds/eligibility.h"

#include <vector>

#include "daemon/model/convert.h"
#include "daemon/sched/placement.h"

namespace farm::builds {
namespace {

// What the jobs a unified-memory worker runs hold of its RAM for GPU validation (one store
// read, only for such workers).
Result<double> HeldValidationGb(store::WorkerStore& workers, const std::string& worker_id,
                                const farm::v1::Capabilities& caps) {
  if (!sched::HasUnifiedMemory(caps)) return 0.0;
  FARM_ASSIGN_OR_RETURN(std::vector<store::JobRow> rows, workers.ListRunningJobs(worker_id));
  std::vector<sched::RunningJob> running;
  for (const store::JobRow& row : rows) {
    running.push_back(
        {model::ParseBlob<farm::v1::MatrixCell>(row.cell), row.validation_mib / 1024.0});
  }
  return sched::HeldValidationGb(caps, running);
}

}  // namespace

Result<std::optional<sched::Dispatcher::Waiter>> MayTakeJob(const EligibilityDeps& deps,
                                                            const std::string& worker_id) {
  std::optional<sched::Dispatcher::Waiter> out;
  FARM_RETURN_IF_ERROR(deps.visits->Together([&]() -> Status {
    FARM_ASSIGN_OR_RETURN(auto worker, deps.workers->GetWorker(worker_id));
    if (worker.drain_requested || worker.state == store::WorkerState::kDraining ||
        worker.state == store::WorkerState::kQuarantined) {
      return Status::Ok();
    }
    auto caps = model::ParseBlob<farm::v1::Capabilities>(worker.capabilities);
    // The per-worker concurrency limit: a worker never holds more jobs than it offered.
    FARM_ASSIGN_OR_RETURN(int running, deps.workers->CountRunningJobs(worker_id));
    if (caps.max_concurrent_jobs() > 0 && running >= caps.max_concurrent_jobs()) {
      return Status::Ok();
    }
    sched::Dispatcher::Waiter waiter;
    FARM_ASSIGN_OR_RETURN(waiter.held_gb, HeldValidationGb(*deps.workers, worker_id, caps));
    waiter.worker_id = worker_id;
    waiter.worker_name = worker.name;
    waiter.caps = std::move(caps);
    out = std::move(waiter);
    return Status::Ok();
  }));
  return out;
}

}  // namespace farm::builds
