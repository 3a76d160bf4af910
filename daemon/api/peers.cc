#include "daemon/api/peers.h"

#include "daemon/model/convert.h"

namespace farm::api {

std::vector<sched::PeerWorker> PeersOf(const std::vector<store::WorkerRow>& rows) {
  std::vector<sched::PeerWorker> peers;
  for (const store::WorkerRow& w : rows) {
    if (w.drain_requested) continue;
    if (w.state == "lost" || w.state == "quarantined" || w.state == "draining") continue;
    peers.push_back({w.name, model::ParseBlob<farm::v1::Capabilities>(w.capabilities), w.id});
  }
  return peers;
}

PeerCache::Snapshot PeerCache::Get(const ServiceContext& ctx, int64_t max_age_ms) {
  std::lock_guard lock(mu_);
  int64_t now = ctx.clock->SteadyMs();
  if (peers_ == nullptr || now - taken_ms_ > max_age_ms) {
    auto rows = ctx.store->ListWorkers();
    peers_ = std::make_shared<const std::vector<sched::PeerWorker>>(
        rows.ok() ? PeersOf(*rows) : std::vector<sched::PeerWorker>{});
    taken_ms_ = now;
  }
  return peers_;
}

}  // namespace farm::api
