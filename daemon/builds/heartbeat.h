// A worker's heartbeat (docs/workers.md): what the worker says of itself is recorded (its
// state: quarantined stays quarantined, else draining, busy or idle; its capabilities,
// sent only when they changed; the progress of the builds it runs), the leases of the
// attempts it holds are renewed, the attempts it runs but no longer holds (requeued while
// it was away) are re-attached when they can be, and the answer says whether it must drain
// and which attempts it must stop.
//
// The heartbeat time and the leases are written a few times per lease, not on every beat
// (with a thousand workers those writes were most of the store's work): six times per
// lease, at most every 5 s, so a live worker is never taken for lost and its leases never
// run out between writes. A change of state is written at once. A build's progress and
// memory are written at most every 4 s per job.
//
// Thread-safe: the store ports and the clock are, and the write throttles lock.
#ifndef FARM_DAEMON_BUILDS_HEARTBEAT_H_
#define FARM_DAEMON_BUILDS_HEARTBEAT_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/job_leases.h"
#include "daemon/store/ports/visits.h"
#include "daemon/store/ports/worker_store.h"
#include "farm/v1/worker.pb.h"

namespace farm::builds {

// When each key (a worker, a job) was last written, so that a write is made at most every
// so often per key. Thread-safe.
template <typename Key>
class WriteThrottle {
 public:
  // True (and recorded) when `key`'s last write is `every_ms` or more before `now_ms`, or
  // there was none, or the clock went back.
  bool Due(const Key& key, int64_t now_ms, int64_t every_ms) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = last_ms_.emplace(key, now_ms);
    if (fresh) {
      if (last_ms_.size() > kMaxKeys) last_ms_ = {{key, now_ms}};
      return true;
    }
    if (now_ms - it->second < every_ms && now_ms >= it->second) return false;
    it->second = now_ms;
    return true;
  }
  // `key` starts afresh (a worker registered again, a job ended): its next write is due.
  void Forget(const Key& key) {
    std::lock_guard lock(mu_);
    last_ms_.erase(key);
  }

 private:
  static constexpr size_t kMaxKeys = 100'000;  // a bound; beyond it, start afresh
  std::mutex mu_;
  std::unordered_map<Key, int64_t> last_ms_;  // guarded by mu_
};

// At most one progress write per running job this often: every heartbeat already costs
// writes, and a build's progress and memory change on nearly every one.
inline constexpr int64_t kProgressEveryMs = 4000;

// How often a heartbeat is written for leases of `lease_ms`: six times per lease, at most
// every 5 s.
int64_t BeatWriteEveryMs(int64_t lease_ms);

struct HeartbeatDeps {
  store::WorkerStore* workers = nullptr;
  store::JobLeases* leases = nullptr;
  store::BuildReader* jobs = nullptr;
  store::Visits* visits = nullptr;  // a beat's reads and writes are one visit
  const Clock* clock = nullptr;
  int64_t lease_ms = 30000;  // a running job's lease, renewed by heartbeats
  // farmd serves a redist tree: a worker that counts on farmd for toolkits may fetch them
  // (sched::SettleProvisioning, applied to the capabilities stored).
  bool serves_toolkits = false;
};

class Heartbeats {
 public:
  explicit Heartbeats(const HeartbeatDeps& deps) : deps_(deps) {}

  // Records heartbeat `req` of worker `worker_id` (the caller has checked that the sender
  // is that worker) and fills `resp`'s drain request and the attempts to stop. NotFound
  // for a worker the store does not know; a store error otherwise.
  Status Beat(const std::string& worker_id, const farm::v1::HeartbeatRequest& req,
              farm::v1::HeartbeatResponse* resp);
  // Worker `worker_id` registered again: its next heartbeat is written whatever its last.
  void Registered(const std::string& worker_id) { beat_writes_.Forget(worker_id); }
  // Attempt `job_id` ended: its next attempt's first progress report is written at once.
  void Ended(int64_t job_id) { progress_.Forget(job_id); }

 private:
  Status BeatOnce(const std::string& worker_id, const farm::v1::HeartbeatRequest& req,
                  farm::v1::HeartbeatResponse* resp);
  // The state and capabilities the beat reports of `worker` (as stored), written when they
  // changed or are `due`.
  Status RecordWorker(store::WorkerRow worker, const farm::v1::HeartbeatRequest& req,
                      int64_t now_ms, bool due);
  // The attempts the worker runs: their progress, and whether each is still its own.
  Status CheckRunning(const std::string& worker_id, const farm::v1::HeartbeatRequest& req,
                      int64_t now_ms, farm::v1::HeartbeatResponse* resp);
  void RecordProgress(const std::string& worker_id, const farm::v1::RunningJob& running);

  HeartbeatDeps deps_;
  WriteThrottle<int64_t> progress_;         // by job id, on the steady clock
  WriteThrottle<std::string> beat_writes_;  // by worker id
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_HEARTBEAT_H_
