// Dispatcher: hands each leasable job to exactly one waiting AcquireJob poll whose worker
// can run it, instead of waking every idle poll to race for it in the store.
//
// It keeps the schedulable state in memory: the leasable jobs in dispatch order (priority
// desc, oldest first) with their parsed cell, needs and memory, and the waiting polls
// grouped by capability class (PlacementClassKey: alike hosts place alike, so
// placement is decided once per job and class). On a unified-memory host what its running
// jobs hold (held_gb) is part of the class too; a validation that excludes workers by id
// is decided per worker. A worker has at most one waiting poll: a newer one ends the older
// (empty; or, when the older one's lease is being written, with that job), so a worker's
// concurrency limit and held memory, read when its poll arrives, stay true until it is
// leased a job. The store stays the truth: the leasable set is
// re-read as ids when Store::QueueGeneration moves (and at least once a second, for
// not-before times that pass), only new jobs are loaded, and every lease is written in a
// store transaction (one per batch of matches, Store::LeaseJobs) before its worker hears of
// it; a job leased or cancelled behind the dispatcher's back is simply not leased again.
//
// One thread does all matching. Thread-safe: Add and Cancel may be called from any thread.
#ifndef FARM_DAEMON_SCHED_DISPATCHER_H_
#define FARM_DAEMON_SCHED_DISPATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/sched/peers.h"
#include "daemon/sched/placement.h"

namespace farm::sched {

class Dispatcher {
 public:
  // The outcome of one wait: the job leased to the worker, nullopt at the deadline, on
  // cancellation or at shutdown, or the store's error.
  using DoneFn = std::function<void(Result<std::optional<store::JobRow>>)>;

  struct Waiter {
    std::string worker_id;
    std::string worker_name;
    farm::v1::Capabilities caps;
    // What the worker's running jobs hold of its unified memory (HeldValidationGb).
    double held_gb = 0;
    int64_t deadline_steady_ms = 0;
    DoneFn done;  // called exactly once, never under the dispatcher's lock
  };

  // Installs itself as the store's queue listener and starts its thread; leases last
  // `lease_ms`. What `fleet` names and `peers` outlive the dispatcher.
  Dispatcher(FleetSource fleet, int64_t lease_ms, PeerCache* peers);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Queues a poll; returns its ticket. After Stop, `done` is called at once with nullopt.
  int64_t Add(Waiter waiter);
  // Ends the poll `ticket` with nullopt soon, unless it already ended. Never blocks on
  // the store.
  void Cancel(int64_t ticket);
  // Ends every poll with nullopt and joins the thread. Idempotent.
  void Stop();

  // For tests and metrics: polls waiting now.
  size_t WaitingCount();

  // The class a poll of `caps` (holding `held_gb` of unified memory) is placed with.
  static std::string ClassKey(const farm::v1::Capabilities& caps, double held_gb);

 private:
  // A leasable job as the dispatcher holds it. `fits` caches placement per class id.
  struct Entry {
    store::JobRow job;
    farm::v1::MatrixCell cell;
    farm::v1::JobNeeds needs;
    JobMemory memory;
    std::unordered_map<int, bool> fits;
  };
  // What the lock guards; shared with the store's listener so that a late signal after
  // the dispatcher is gone touches only this.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool kicked = false;
    bool stopped = false;
    int64_t next_ticket = 1;
    std::map<int64_t, Waiter> waiting;            // by ticket, oldest first
    std::map<std::string, int> class_of_caps;     // serialized caps -> class id
    std::map<int, std::deque<int64_t>> by_class;  // class id -> tickets, FIFO
    std::unordered_map<int64_t, int> class_of_ticket;
    std::unordered_map<std::string, int64_t> ticket_of_worker;
    // (deadline, ticket) of every waiting poll: the due ones are found without a scan.
    std::set<std::pair<int64_t, int64_t>> by_deadline;
    // Polls matched to a job whose lease is being written: only the dispatcher thread ends
    // them (Add defers a replaced one to `cancelled`).
    std::unordered_set<int64_t> leasing;
    std::vector<int64_t> cancelled;
  };
  struct Match {
    Entry* entry;
    int64_t ticket;
  };

  void Loop();
  // Re-reads the leasable ids and loads the jobs not yet held. Dispatcher thread only.
  Status Refresh(int64_t now_ms);
  // Pairs held jobs with waiting polls (under the lock, no store call).
  std::vector<Match> MatchLocked(const PeerCache::Snapshot& peers);
  bool Fits(Entry& entry, int class_id, const Waiter& waiter, const PeerCache::Snapshot& peers);
  // Writes the leases of `matches` and ends their polls.
  void Lease(const std::vector<Match>& matches);
  // Removes `ticket` from the queues and returns its waiter. Requires the lock.
  std::optional<Waiter> TakeLocked(int64_t ticket);
  // Ends cancelled polls, and those past their deadline when `now_steady_ms` is given.
  void ExpireWaiters(std::optional<int64_t> now_steady_ms);

  FleetSource fleet_;
  int64_t lease_ms_;
  PeerCache* peers_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  // Dispatcher thread only:
  std::vector<std::unique_ptr<Entry>> jobs_;  // dispatch order
  int64_t seen_generation_ = -1;
  int64_t refreshed_steady_ms_ = 0;
  const void* peers_seen_ = nullptr;
  std::thread thread_;
};

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_DISPATCHER_H_
