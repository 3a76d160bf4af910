// FleetCache: the registered workers as placement explanations read them, kept between
// replies. With a thousand workers, parsing every worker's capabilities (and grouping them
// into classes and peers) for each build reply cost more than the rest of SubmitBuild. The
// view is rebuilt only when a worker row changes in what placement reads: its id, name,
// capabilities, drain flag, or a state of lost, draining or quarantined. A heartbeat's time
// or a flip between idle and busy keeps it. Thread-safe.
#ifndef FARM_DAEMON_SCHED_FLEET_CACHE_H_
#define FARM_DAEMON_SCHED_FLEET_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/sched/placement.h"
#include "daemon/sched/waiting.h"
#include "daemon/store/store.h"

namespace farm::sched {

struct FleetView {
  std::map<std::string, std::string> names;  // worker id -> name
  std::vector<FleetWorker> fleet;
  std::vector<PeerWorker> peers;

  std::string NameOf(const std::string& worker_id) const {
    auto it = names.find(worker_id);
    return it == names.end() ? "" : it->second;
  }
};

class FleetCache {
 public:
  // The view of `rows` (Store::ListWorkers, in its order): the kept one when no row
  // changed in what placement reads, else a new one.
  std::shared_ptr<const FleetView> Get(const std::vector<store::WorkerRow>& rows);
  // Views built so far (for tests).
  int64_t builds() const;

 private:
  static std::string Fingerprint(const std::vector<store::WorkerRow>& rows);

  mutable std::mutex mu_;
  std::string fingerprint_;  // guarded by mu_
  std::shared_ptr<const FleetView> view_;
  int64_t builds_ = 0;
};

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_FLEET_CACHE_H_
