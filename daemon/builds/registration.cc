#include "daemon/builds/registration.h"

#include "common/log.h"
#include "common/sha256.h"
#include "daemon/sched/placement.h"

namespace farm::builds {

Result<Registration> RegisterWorker(const RegistrationDeps& deps, const auth::Principal& who,
                                    const std::string& worker_id, const std::string& name,
                                    const farm::v1::Capabilities& caps) {
  const bool again = who.role == "worker";
  if (again && !worker_id.empty() && worker_id != who.worker_id) {
    return Status::PermissionDenied("token of worker " + who.worker_id + " used for " + worker_id);
  }
  int64_t now = deps.clock->NowUnixMs();
  Registration r{.worker_id = again ? who.worker_id : "w-" + RandomHex(6)};
  r.name = name.empty() ? r.worker_id : name;
  if (!again) {
    FARM_ASSIGN_OR_RETURN(r.token, deps.issue_token(name, r.worker_id));
  }
  // A worker whose probe failed is kept out of placement until an admin looks.
  r.state =
      caps.probe_error().empty() ? store::WorkerState::kIdle : store::WorkerState::kQuarantined;
  if (again) {
    // A worker that registers again has restarted: the builds it held died with it.
    const std::string why = "worker " + r.worker_id + " restarted";
    FARM_ASSIGN_OR_RETURN(auto lost, deps.leases->ReleaseWorkerJobs(r.worker_id, {}, why, now));
    for (int64_t job : lost) log::Warn("job " + std::to_string(job) + " requeued: " + why);
  }
  farm::v1::Capabilities settled = caps;
  sched::SettleProvisioning(deps.serves_toolkits, &settled);
  FARM_RETURN_IF_ERROR(deps.workers->UpsertWorker(
      store::WorkerRow{r.worker_id, r.name, settled.SerializeAsString(), r.state, now, now}));
  return r;
}

}  // namespace farm::builds
