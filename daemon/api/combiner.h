// Combiner: runs the work of concurrent callers in batches, without a thread of its own.
// A caller hands in its item and waits. The first caller to find no batch running takes
// the items queued so far (at most `max_batch`, its own among them), runs them with
// `run_batch`, wakes their callers and, while its own item is done, returns. So a burst of
// calls costs one batch per burst instead of one run each, and a lone call runs at once.
// `run_batch` must not throw. Thread-safe.
#ifndef FARM_DAEMON_API_COMBINER_H_
#define FARM_DAEMON_API_COMBINER_H_

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace farm::api {

template <typename Item>
class Combiner {
 public:
  using RunBatch = std::function<void(const std::vector<Item*>&)>;

  Combiner(RunBatch run_batch, size_t max_batch)
      : run_batch_(std::move(run_batch)), max_batch_(std::max<size_t>(1, max_batch)) {}

  // Returns once a batch holding `item` has run.
  void Run(Item* item) {
    std::unique_lock lock(mu_);
    queue_.push_back(item);
    int64_t mine = ++queued_;  // the item's place in the order of arrival
    while (done_ < mine) {
      if (running_) {
        ran_cv_.wait(lock);
        continue;
      }
      running_ = true;
      size_t n = std::min(max_batch_, queue_.size());
      std::vector<Item*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      lock.unlock();
      run_batch_(batch);
      lock.lock();
      running_ = false;
      done_ += static_cast<int64_t>(n);  // items leave the queue in arrival order
      ++batches_;
      ran_cv_.notify_all();
    }
  }

  // Batches run so far (for tests and figures).
  int64_t batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  RunBatch run_batch_;
  size_t max_batch_;
  mutable std::mutex mu_;
  std::condition_variable ran_cv_;
  std::deque<Item*> queue_;  // guarded by mu_
  int64_t queued_ = 0;       // items ever queued
  int64_t done_ = 0;         // items ever run: the first done_ queued
  int64_t batches_ = 0;
  bool running_ = false;
};

}  // namespace farm::api

#endif  // FARM_DAEMON_API_COMBINER_H_
