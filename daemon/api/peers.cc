#include "daemon/api/peers.h"

#include "daemon/model/convert.h"

namespace farm::api {

std::vector<sched::PeerWorker> PeersOf(const std::vector<store::WorkerRow>& rows,
                                       const std::string& self_id) {
  std::vector<sched::PeerWorker> peers;
  for (const store::WorkerRow& w : rows) {
    if (w.id == self_id || w.drain_requested) continue;
    if (w.state == "lost" || w.state == "quarantined" || w.state == "draining") continue;
    peers.push_back({w.name, model::ParseBlob<farm::v1::Capabilities>(w.capabilities)});
  }
  return peers;
}

std::vector<sched::PeerWorker> PeerCache::Get(const ServiceContext& ctx, const std::string& self_id,
                                              int64_t max_age_ms) {
  std::lock_guard lock(mu_);
  int64_t now = ctx.clock->SteadyMs();
  if (taken_ms_ < 0 || now - taken_ms_ > max_age_ms) {
    auto rows = ctx.store->ListWorkers();
    rows_ = rows.ok() ? std::move(rows).value() : std::vector<store::WorkerRow>{};
    taken_ms_ = now;
  }
  return PeersOf(rows_, self_id);
}

}  // namespace farm::api
