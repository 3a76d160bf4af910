#include "daemon/sched/dispatcher.h"

#include <algorithm>
#include <unordered_set>

#include "common/log.h"
#include "daemon/model/convert.h"
#include "daemon/sched/placement.h"

namespace farm::sched {
namespace {

// The leasable set is re-read at least this often (not-before times pass silently).
constexpr int64_t kRefreshEveryMs = 1000;
// Without a signal the thread still looks this often (a store without a queue listener).
constexpr int64_t kIdleWaitMs = 20;
// At most this many leasable jobs are held in memory; the rest wait for the next refresh.
constexpr int kMaxHeldJobs = 100'000;
// At most this many leases per store transaction.
constexpr size_t kMaxBatch = 256;

}  // namespace

Dispatcher::Dispatcher(FleetSource fleet, int64_t lease_ms, PeerCache* peers)
    : fleet_(fleet), lease_ms_(lease_ms), peers_(peers) {
  std::weak_ptr<Shared> weak = shared_;
  fleet_.store->SetQueueListener([weak] {
    auto shared = weak.lock();
    if (!shared) return;
    std::lock_guard lock(shared->mu);
    shared->kicked = true;
    shared->cv.notify_one();
  });
  thread_ = std::thread([this] { Loop(); });
}

Dispatcher::~Dispatcher() { Stop(); }

std::string Dispatcher::ClassKey(const farm::v1::Capabilities& caps, double held_gb) {
  std::string key = PlacementClassKey(caps);
  // Placement on a unified-memory host also depends on what its running jobs hold.
  if (HasUnifiedMemory(caps)) key += "\nheld_gb=" + std::to_string(held_gb);
  return key;
}

int64_t Dispatcher::Add(Waiter waiter) {
  std::unique_lock lock(shared_->mu);
  if (shared_->stopped) {
    lock.unlock();
    waiter.done(std::optional<store::JobRow>());
    return 0;
  }
  // One waiting poll per worker: the older one ends empty, its reply no longer wanted.
  std::optional<Waiter> older;
  auto same = shared_->ticket_of_worker.find(waiter.worker_id);
  if (same != shared_->ticket_of_worker.end()) {
    if (shared_->leasing.count(same->second)) {
      shared_->cancelled.push_back(same->second);  // its lease is being written: it gets it
    } else {
      older = TakeLocked(same->second);
    }
  }
  int64_t ticket = shared_->next_ticket++;
  std::string key = ClassKey(waiter.caps, waiter.held_gb);
  auto [it, fresh] = shared_->class_of_caps.emplace(key, 0);
  if (fresh) it->second = static_cast<int>(shared_->class_of_caps.size());
  shared_->by_class[it->second].push_back(ticket);
  shared_->class_of_ticket[ticket] = it->second;
  shared_->ticket_of_worker[waiter.worker_id] = ticket;
  shared_->by_deadline.emplace(waiter.deadline_steady_ms, ticket);
  shared_->waiting.emplace(ticket, std::move(waiter));
  shared_->kicked = true;
  shared_->cv.notify_one();
  lock.unlock();
  if (older) older->done(std::optional<store::JobRow>());
  return ticket;
}

void Dispatcher::Cancel(int64_t ticket) {
  std::lock_guard lock(shared_->mu);
  shared_->cancelled.push_back(ticket);
  shared_->kicked = true;
  shared_->cv.notify_one();
}

void Dispatcher::Stop() {
  std::vector<Waiter> left;
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->stopped) return;
    shared_->stopped = true;
    shared_->cv.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(shared_->mu);
    for (auto& [ticket, w] : shared_->waiting) left.push_back(std::move(w));
    shared_->waiting.clear();
    shared_->by_class.clear();
    shared_->class_of_ticket.clear();
    shared_->ticket_of_worker.clear();
    shared_->by_deadline.clear();
  }
  for (Waiter& w : left) w.done(std::optional<store::JobRow>());
}

size_t Dispatcher::WaitingCount() {
  std::lock_guard lock(shared_->mu);
  return shared_->waiting.size();
}

std::optional<Dispatcher::Waiter> Dispatcher::TakeLocked(int64_t ticket) {
  auto it = shared_->waiting.find(ticket);
  if (it == shared_->waiting.end()) return std::nullopt;
  Waiter w = std::move(it->second);
  shared_->waiting.erase(it);
  shared_->by_deadline.erase({w.deadline_steady_ms, ticket});
  auto mine = shared_->ticket_of_worker.find(w.worker_id);
  if (mine != shared_->ticket_of_worker.end() && mine->second == ticket)
    shared_->ticket_of_worker.erase(mine);
  auto cls = shared_->class_of_ticket.find(ticket);
  if (cls != shared_->class_of_ticket.end()) {
    auto& queue = shared_->by_class[cls->second];
    queue.erase(std::remove(queue.begin(), queue.end(), ticket), queue.end());
    shared_->class_of_ticket.erase(cls);
  }
  return w;
}

void Dispatcher::ExpireWaiters(std::optional<int64_t> now_steady_ms) {
  std::vector<Waiter> ended;
  {
    std::lock_guard lock(shared_->mu);
    for (int64_t ticket : shared_->cancelled) {
      if (auto w = TakeLocked(ticket)) ended.push_back(std::move(*w));
    }
    shared_->cancelled.clear();
    while (now_steady_ms && !shared_->by_deadline.empty() &&
           shared_->by_deadline.begin()->first <= *now_steady_ms) {
      auto due = shared_->by_deadline.begin();
      if (auto w = TakeLocked(due->second)) {
        ended.push_back(std::move(*w));
      } else {
        shared_->by_deadline.erase(due);  // never left behind by TakeLocked; a bound all the same
      }
    }
  }
  for (Waiter& w : ended) w.done(std::optional<store::JobRow>());
}

Status Dispatcher::Refresh(int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(auto ids, fleet_.store->ListLeasableJobIds(now_ms, kMaxHeldJobs));
  std::unordered_map<int64_t, std::unique_ptr<Entry>> held;
  for (auto& e : jobs_) held.emplace(e->job.id, std::move(e));
  std::vector<int64_t> missing;
  for (int64_t id : ids) {
    if (!held.count(id)) missing.push_back(id);
  }
  if (!missing.empty()) {
    FARM_ASSIGN_OR_RETURN(auto rows, fleet_.store->GetJobs(missing));
    for (store::JobRow& row : rows) {
      auto e = std::make_unique<Entry>();
      e->cell = model::ParseBlob<farm::v1::MatrixCell>(row.cell);
      e->needs = model::ParseBlob<farm::v1::JobNeeds>(row.needs);
      e->memory = {.compile_gb = row.compile_mib / 1024.0,
                   .validation_gb = row.validation_mib / 1024.0};
      e->job = std::move(row);
      held[e->job.id] = std::move(e);
    }
  }
  jobs_.clear();
  for (int64_t id : ids) {
    auto it = held.find(id);
    if (it != held.end()) jobs_.push_back(std::move(it->second));
  }
  return Status::Ok();
}

bool Dispatcher::Fits(Entry& entry, int class_id, const Waiter& waiter,
                      const PeerCache::Snapshot& peers) {
  if (entry.job.kind == store::kJobValidate) {
    // A retried validation excludes workers by id: decided per worker, not per class.
    if (entry.needs.exclude_workers_size() > 0) {
      return ValidationBlocker(entry.cell, entry.needs, waiter.caps, waiter.worker_id).empty();
    }
    auto [it, fresh] = entry.fits.emplace(class_id, false);
    if (fresh) {
      it->second =
          ValidationBlocker(entry.cell, entry.needs, waiter.caps, waiter.worker_id).empty();
    }
    return it->second;
  }
  auto [it, fresh] = entry.fits.emplace(class_id, false);
  if (fresh) {
    it->second =
        PlacementBlocker(entry.cell, waiter.caps, *peers, entry.needs, entry.memory, waiter.held_gb)
            .empty();
  }
  return it->second;
}

std::vector<Dispatcher::Match> Dispatcher::MatchLocked(const PeerCache::Snapshot& peers) {
  std::vector<Match> matches;
  // Per class, how many of its queued polls are still free in this round.
  std::map<int, size_t> next;
  size_t free = 0;
  for (const auto& [cls, queue] : shared_->by_class) {
    if (!queue.empty()) next[cls] = 0;
    free += queue.size();
  }
  for (auto& entry : jobs_) {
    if (free == 0 || matches.size() >= kMaxBatch) break;
    for (auto& [cls, used] : next) {
      const auto& queue = shared_->by_class[cls];
      if (used >= queue.size()) continue;
      const Waiter& first = shared_->waiting.at(queue[used]);
      if (entry->needs.exclude_workers_size() == 0 || entry->job.kind != store::kJobValidate) {
        if (!Fits(*entry, cls, first, peers)) continue;
        matches.push_back({entry.get(), queue[used]});
        shared_->leasing.insert(queue[used]);
        ++used;
        --free;
        break;
      }
      // Per-worker placement: the first free poll of the class (those from `used` on) that
      // may take it, moved to the front of the free ones.
      bool placed = false;
      for (size_t i = used; i < queue.size() && !placed; ++i) {
        if (!Fits(*entry, cls, shared_->waiting.at(queue[i]), peers)) continue;
        std::swap(shared_->by_class[cls][i], shared_->by_class[cls][used]);
        matches.push_back({entry.get(), queue[used]});
        shared_->leasing.insert(queue[used]);
        ++used;
        --free;
        placed = true;
      }
      if (placed) break;
    }
  }
  return matches;
}

void Dispatcher::Lease(const std::vector<Match>& matches) {
  std::vector<store::LeaseRequest> requests;
  {
    std::lock_guard lock(shared_->mu);
    for (const Match& m : matches)
      requests.push_back({m.entry->job.id, shared_->waiting.at(m.ticket).worker_id});  // leasing
  }
  auto leased = fleet_.store->LeaseJobs(requests, fleet_.clock->NowUnixMs(), lease_ms_);
  std::vector<std::pair<Waiter, Result<std::optional<store::JobRow>>>> ended;
  std::unordered_set<const Entry*> gone;
  {
    std::lock_guard lock(shared_->mu);
    for (const Match& m : matches) shared_->leasing.erase(m.ticket);
    for (size_t i = 0; i < matches.size(); ++i) {
      if (!leased.ok()) {
        ended.emplace_back(std::move(*TakeLocked(matches[i].ticket)), leased.status());
        continue;
      }
      // Leased elsewhere or no longer leasable: the job leaves, the poll keeps waiting.
      gone.insert(matches[i].entry);
      if (!(*leased)[i]) continue;
      // A poll cancelled (or replaced by its worker's newer poll) during this transaction
      // still gets the job. farm-worker cancels
      // its polls only when it stops or loses farmd: it registers again (which requeues
      // what it held) or its heartbeats stop and the lease expires.
      ended.emplace_back(std::move(*TakeLocked(matches[i].ticket)), std::move((*leased)[i]));
    }
  }
  if (!gone.empty()) {
    jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                               [&gone](const auto& e) { return gone.count(e.get()) > 0; }),
                jobs_.end());
  }
  for (auto& [waiter, outcome] : ended) waiter.done(std::move(outcome));
}

void Dispatcher::Loop() {
  for (;;) {
    {
      std::unique_lock lock(shared_->mu);
      shared_->cv.wait_for(lock, std::chrono::milliseconds(kIdleWaitMs),
                           [this] { return shared_->kicked || shared_->stopped; });
      if (shared_->stopped) return;
      shared_->kicked = false;
    }
    int64_t steady = fleet_.clock->SteadyMs();
    int64_t generation = fleet_.store->QueueGeneration();
    if (generation != seen_generation_ || steady - refreshed_steady_ms_ >= kRefreshEveryMs) {
      Status refreshed = Refresh(fleet_.clock->NowUnixMs());
      if (refreshed.ok()) {
        seen_generation_ = generation;
        refreshed_steady_ms_ = steady;
      } else {
        log::Warn("dispatch: reading the queue failed: " + refreshed.ToString());
      }
    }
    PeerCache::Snapshot peers = peers_->Get(fleet_);
    if (peers.get() != peers_seen_) {  // another fleet: placement may differ
      for (auto& e : jobs_) e->fits.clear();
      peers_seen_ = peers.get();
    }
    ExpireWaiters(std::nullopt);  // polls whose client left take no job
    // Match and lease until no job fits a waiting poll; each round is one transaction.
    for (int round = 0; round < 1000; ++round) {
      std::vector<Match> matches;
      {
        std::lock_guard lock(shared_->mu);
        matches = MatchLocked(peers);
      }
      if (matches.empty()) break;
      Lease(matches);
    }
    ExpireWaiters(fleet_.clock->SteadyMs());
  }
}

}  // namespace farm::sched
