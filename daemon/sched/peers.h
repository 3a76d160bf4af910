// Peers for validation-aware placement (PlacementBlocker): the registered workers
// that may take jobs now. AcquireJob runs on every worker's long poll, so it reads them
// through PeerCache, a snapshot re-read at most once a second. Thread-safe.
#ifndef FARM_DAEMON_SCHED_PEERS_H_
#define FARM_DAEMON_SCHED_PEERS_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/sched/fleet_cache.h"
#include "daemon/sched/placement.h"
#include "daemon/store/store.h"

namespace farm::sched {

// The workers of `rows` that are not lost, quarantined or draining. The asking worker may
// be among them: PlacementBlocker only yields to a peer that can validate, which the asking
// worker then is not.
std::vector<PeerWorker> PeersOf(const std::vector<store::WorkerRow>& rows);

// Where the scheduler reads the fleet from. Everything named outlives its users.
struct FleetSource {
  store::Store* store = nullptr;
  const Clock* clock = nullptr;
  FleetCache* fleet_cache = nullptr;  // the parsed view, shared with build replies
};

class PeerCache {
 public:
  using Snapshot = std::shared_ptr<const std::vector<PeerWorker>>;
  // PeersOf the stored workers, read at most `max_age_ms` ago. The snapshot is the same
  // object until a worker changes in what placement reads (FleetCache), so callers may
  // keep what they decided with it. On a store error the snapshot is empty (placement
  // then ignores validation, never blocks).
  Snapshot Get(const FleetSource& fleet, int64_t max_age_ms = 1000);

 private:
  std::mutex mu_;
  int64_t taken_ms_ = -1;
  Snapshot peers_;
};

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_PEERS_H_
