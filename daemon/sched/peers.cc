#include "daemon/sched/peers.h"

#include "daemon/sched/rows.h"

namespace farm::sched {

std::vector<PeerWorker> PeersOf(const std::vector<store::WorkerRow>& rows) {
  return AvailablePeers(FleetOf(rows));
}

PeerCache::Snapshot PeerCache::Get(const FleetSource& fleet, int64_t max_age_ms) {
  std::lock_guard lock(mu_);
  int64_t now = fleet.clock->SteadyMs();
  if (peers_ == nullptr || now - taken_ms_ > max_age_ms) {
    auto rows = fleet.store->ListWorkers();
    if (rows.ok()) {
      // The fleet's parsed view, shared with build replies: the same snapshot (and pointer)
      // while no worker changed in what placement reads, so the dispatcher keeps its
      // placement decisions.
      std::shared_ptr<const FleetView> view = fleet.fleet_cache->Get(*rows);
      peers_ = Snapshot(view, &view->peers);
    } else {
      peers_ = std::make_shared<const std::vector<PeerWorker>>();
    }
    taken_ms_ = now;
  }
  return peers_;
}

}  // namespace farm::sched
