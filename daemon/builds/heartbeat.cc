#include "daemon/builds/heartbeat.h"

#include <algorithm>
#include <utility>

#include "common/log.h"
#include "daemon/sched/placement.h"

namespace farm::builds {

int64_t BeatWriteEveryMs(int64_t lease_ms) { return std::clamp<int64_t>(lease_ms / 6, 1, 5000); }

Status Heartbeats::Beat(const std::string& worker_id, const farm::v1::HeartbeatRequest& req,
                        farm::v1::HeartbeatResponse* resp) {
  // One visit to the store for the beat's reads and writes.
  return deps_.visits->Together([&] { return BeatOnce(worker_id, req, resp); });
}

Status Heartbeats::BeatOnce(const std::string& worker_id, const farm::v1::HeartbeatRequest& req,
                            farm::v1::HeartbeatResponse* resp) {
  const int64_t now = deps_.clock->NowUnixMs();
  FARM_ASSIGN_OR_RETURN(store::WorkerRow worker, deps_.workers->GetWorker(worker_id));
  const bool due = beat_writes_.Due(worker_id, now, BeatWriteEveryMs(deps_.lease_ms));
  resp->set_drain(worker.drain_requested);
  FARM_RETURN_IF_ERROR(RecordWorker(std::move(worker), req, now, due));
  FARM_ASSIGN_OR_RETURN(auto cancelled,
                        due ? deps_.leases->RenewLeases(worker_id, now, deps_.lease_ms)
                            : deps_.leases->CancelRequestedJobs(worker_id));
  for (const auto& job : cancelled) {
    auto* c = resp->add_cancel();
    c->set_job_id(job.id);
    c->set_attempt(job.attempt);
  }
  return CheckRunning(worker_id, req, now, resp);
}

Status Heartbeats::RecordWorker(store::WorkerRow worker, const farm::v1::HeartbeatRequest& req,
                                int64_t now_ms, bool due) {
  using store::WorkerState;
  const bool draining = req.draining() || worker.drain_requested;
  const WorkerState state = worker.state == WorkerState::kQuarantined ? WorkerState::kQuarantined
                            : draining                                ? WorkerState::kDraining
                            : req.running_size()                      ? WorkerState::kBusy
                                                                      : WorkerState::kIdle;
  if (req.has_capabilities()) {
    // Sent only when they changed (a GPU appeared or failed, a toolkit was installed, the
    // environment cache grew): placement, revalidation and `workers` read the stored copy.
    farm::v1::Capabilities caps = req.capabilities();
    sched::SettleProvisioning(deps_.serves_toolkits, &caps);
    worker.capabilities = caps.SerializeAsString();
    worker.state = state;
    worker.last_heartbeat_ms = now_ms;
    FARM_RETURN_IF_ERROR(deps_.workers->UpsertWorker(worker));
    log::Info("worker " + worker.id + " reported new capabilities: " +
              std::to_string(req.capabilities().gpus_size()) + " GPU(s)");
  } else if (due || state != worker.state) {
    FARM_RETURN_IF_ERROR(deps_.workers->TouchWorker(worker.id, now_ms, state));
  }
  return Status::Ok();
}

Status Heartbeats::CheckRunning(const std::string& worker_id, const farm::v1::HeartbeatRequest& req,
                                int64_t now_ms, farm::v1::HeartbeatResponse* resp) {
  // Attempts the worker still runs but no longer holds (requeued while it was away).
  for (const auto& running : req.running()) {
    RecordProgress(worker_id, running);
    FARM_ASSIGN_OR_RETURN(bool reattached,
                          deps_.leases->ReattachAttempt(running.job_id(), running.attempt(),
                                                        worker_id, now_ms, deps_.lease_ms));
    if (reattached) {
      log::Info("job " + std::to_string(running.job_id()) + " attempt " +
                std::to_string(running.attempt()) + " re-attached to its worker " + worker_id);
      continue;
    }
    auto job = deps_.jobs->GetJob(running.job_id());
    if (job.ok() && (job->attempt != running.attempt() || job->worker_id != worker_id ||
                     job->state != store::kJobRunning)) {
      *resp->add_cancel() = running;
    }
  }
  return Status::Ok();
}

// Progress and peak RSS of a running build, for watchers. The store ignores reports on
// attempts the worker does not hold; a failure costs only the figures, never the
// heartbeat.
void Heartbeats::RecordProgress(const std::string& worker_id, const farm::v1::RunningJob& running) {
  if (running.units_done() <= 0 && running.units_total() <= 0 && running.peak_rss_bytes() <= 0) {
    return;
  }
  if (!progress_.Due(running.job_id(), deps_.clock->SteadyMs(), kProgressEveryMs)) return;
  store::ProgressReport report{running.job_id(),
                               running.attempt(),
                               worker_id,
                               std::max<int64_t>(0, running.units_done()),
                               std::max<int64_t>(0, running.units_total()),
                               std::max<int64_t>(0, running.peak_rss_bytes())};
  auto recorded = deps_.leases->RecordProgress(report);
  if (!recorded.ok()) {
    log::Debug("progress of job " + std::to_string(running.job_id()) + ": " +
               recorded.status().ToString());
  }
}

}  // namespace farm::builds
