// What farmctl show, the API and the job page say of a provisioned job's environment lock:
// its size and what changed since the previous build of the same recipe in the same cell.
#ifndef FARM_DAEMON_MODEL_LOCK_INFO_H_
#define FARM_DAEMON_MODEL_LOCK_INFO_H_

#include <optional>
#include <string>

#include "common/status.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/lock_store.h"
#include "farm/v1/types.pb.h"

namespace farm::model {

// The lock of `job` (its JobNeeds.lock_digest) of a build of `recipe_name`, with the changes
// from the lock of the newest earlier build job of that recipe in the same cell (looking
// back at most 50 builds). nullopt for a job without a lock. A lock missing from the store
// is DataLoss.
Result<std::optional<farm::v1::LockInfo>> JobLockInfo(store::BuildReader& builds,
                                                      store::LockStore& locks,
                                                      const store::JobRow& job,
                                                      const std::string& recipe_name);

// "lock 3f2a9c41d0e2: 33 packages, 4.5 GiB; since job 12: torch 2.11.0 -> 2.11.1", for
// farmctl and logs.
std::string DescribeLockInfo(const farm::v1::LockInfo& info);

}  // namespace farm::model

#endif  // FARM_DAEMON_MODEL_LOCK_INFO_H_
