// A worker's registration (docs/workers.md): an enrollment token makes a new worker with a
// token of its own; a worker token registers the same worker again, which means it
// restarted, so the attempts it held died with it and are requeued. A worker whose probe
// failed is kept out of placement (quarantined) until an admin looks.
//
// Thread-safe: the store ports, the clock and the token issuer are.
#ifndef FARM_DAEMON_BUILDS_REGISTRATION_H_
#define FARM_DAEMON_BUILDS_REGISTRATION_H_

#include <functional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/auth/token_authority.h"
#include "daemon/store/ports/job_leases.h"
#include "daemon/store/ports/worker_store.h"
#include "farm/v1/types.pb.h"

namespace farm::builds {

// Issues the token of worker `worker_id` named `name` (auth::TokenAuthority::Create with
// role "worker").
using WorkerTokenIssuer =
    std::function<Result<std::string>(const std::string& name, const std::string& worker_id)>;

struct RegistrationDeps {
  store::WorkerStore* workers = nullptr;
  store::JobLeases* leases = nullptr;
  const Clock* clock = nullptr;
  WorkerTokenIssuer issue_token;
  // farmd serves a redist tree: a worker that counts on farmd for toolkits may fetch them
  // (sched::SettleProvisioning, applied to the capabilities stored).
  bool serves_toolkits = false;
};

struct Registration {
  std::string worker_id;
  std::string name;
  std::string token;  // a new worker's token; "" when a worker registered again
  store::WorkerState state = store::WorkerState::kIdle;
};

// Registers a worker for `who`: an enroll principal registers a new worker (`worker_id`
// is ignored), a worker principal itself again (PermissionDenied when `worker_id`, when
// given, is another's). `name` "" names it by its id.
Result<Registration> RegisterWorker(const RegistrationDeps& deps, const auth::Principal& who,
                                    const std::string& worker_id, const std::string& name,
                                    const farm::v1::Capabilities& caps);

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_REGISTRATION_H_
