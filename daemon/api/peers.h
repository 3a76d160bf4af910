// Peers for validation-aware placement (sched::PlacementBlocker): the registered workers
// that may take jobs now. AcquireJob runs on every worker's long poll, so it reads them
// through PeerCache, a snapshot refreshed at most once a second. Thread-safe.
#ifndef FARM_DAEMON_API_PEERS_H_
#define FARM_DAEMON_API_PEERS_H_

#include <mutex>
#include <string>
#include <vector>

#include "daemon/api/service_context.h"
#include "daemon/sched/placement.h"

namespace farm::api {

// The workers of `rows` other than `self_id` that are not lost, quarantined or draining.
std::vector<sched::PeerWorker> PeersOf(const std::vector<store::WorkerRow>& rows,
                                       const std::string& self_id);

class PeerCache {
 public:
  // PeersOf the stored workers, from a snapshot at most `max_age_ms` old. On a store error
  // returns no peers (placement then ignores validation, never blocks on it).
  std::vector<sched::PeerWorker> Get(const ServiceContext& ctx, const std::string& self_id,
                                     int64_t max_age_ms = 1000);

 private:
  std::mutex mu_;
  int64_t taken_ms_ = -1;
  std::vector<store::WorkerRow> rows_;
};

}  // namespace farm::api

#endif  // FARM_DAEMON_API_PEERS_H_
