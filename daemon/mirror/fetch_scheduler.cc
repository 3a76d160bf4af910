#include "daemon/mirror/fetch_scheduler.h"

#include <algorithm>

#include "common/log.h"

namespace farm::mirror {

FetchScheduler::FetchScheduler(FetchLimits limits) : limits_(limits) {
  int threads = std::clamp(limits_.max_in_flight, 1, 256);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

FetchScheduler::~FetchScheduler() { Stop(); }

Status FetchScheduler::Submit(const std::string& address, std::function<void()> run,
                              std::function<void()> dropped) {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return Status::Unavailable("farmd is stopping");
    if (static_cast<int>(queue_.size()) >= limits_.max_queued) {
      return Status::ResourceExhausted(std::to_string(queue_.size()) +
                                       " upstream fetches are waiting already; try again later");
    }
    queue_.push_back({address, std::move(run), std::move(dropped)});
  }
  cv_.notify_all();
  return Status::Ok();
}

bool FetchScheduler::TakeRunnable(Task* out) {
  const int per_address = std::max(1, limits_.max_per_address);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (per_address_[it->address] >= per_address) continue;
    *out = std::move(*it);
    queue_.erase(it);
    return true;
  }
  return false;
}

void FetchScheduler::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    Task task;
    cv_.wait(lock, [&] { return stopped_ || TakeRunnable(&task); });
    if (!task.run) return;  // stopped
    const std::string address = task.address;
    ++running_;
    ++per_address_[address];
    lock.unlock();
    try {
      task.run();
    } catch (const std::exception& e) {
      log::Error(std::string("pull-through cache: an upstream task failed: ") + e.what());
    } catch (...) {
      log::Error("pull-through cache: an upstream task failed");
    }
    task = Task{};  // its captures go before the lock is taken again
    lock.lock();
    --running_;
    if (--per_address_[address] <= 0) per_address_.erase(address);
    cv_.notify_all();  // a task of this address may run now
  }
}

void FetchScheduler::Stop() {
  std::deque<Task> dropped;
  {
    std::lock_guard lock(mu_);
    if (stopped_ && threads_.empty()) return;
    stopped_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (Task& t : dropped) {
    if (t.dropped) t.dropped();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

int FetchScheduler::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

int FetchScheduler::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

}  // namespace farm::mirror
