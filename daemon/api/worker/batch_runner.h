// BatchRunner: runs queued items in batches on a thread of its own. Add() queues an item and
// returns at once; the thread takes what is queued (at most `max_batch`, in arrival order)
// and hands it to `run_batch`, which must answer every item of the batch and not throw. So
// a burst of gRPC callbacks costs one batch per burst and holds no thread per call. Stop()
// refuses later items, runs the queued ones and joins the thread. Thread-safe.
#ifndef FARM_DAEMON_API_WORKER_BATCH_RUNNER_H_
#define FARM_DAEMON_API_WORKER_BATCH_RUNNER_H_

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace farm::api {

template <typename Item>
class BatchRunner {
 public:
  using Batch = std::vector<std::unique_ptr<Item>>;
  using RunBatch = std::function<void(Batch&)>;

  BatchRunner(RunBatch run_batch, size_t max_batch)
      : run_batch_(std::move(run_batch)), max_batch_(std::max<size_t>(1, max_batch)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~BatchRunner() { Stop(); }
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // Queues `item`; false (the item is handed back untouched) once Stop has begun.
  bool Add(std::unique_ptr<Item>& item) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(item));
    queued_cv_.notify_one();
    return true;
  }

  // Refuses later items, runs every queued one, and returns once the thread has ended.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      queued_cv_.notify_one();
    }
    std::lock_guard join(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

  // Batches run so far (for tests and figures).
  int64_t batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  void Loop() {
    for (;;) {
      Batch batch;
      {
        std::unique_lock lock(mu_);
        queued_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to run
        while (!queue_.empty() && batch.size() < max_batch_) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        ++batches_;
      }
      run_batch_(batch);
    }
  }

  RunBatch run_batch_;
  size_t max_batch_;
  mutable std::mutex mu_;
  std::condition_variable queued_cv_;
  std::deque<std::unique_ptr<Item>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  int64_t batches_ = 0;                      // guarded by mu_
  std::mutex join_mu_;                       // one joiner at a time
  std::thread thread_;                       // last: it uses the members above
};

}  // namespace farm::api

#endif  // FARM_DAEMON_API_WORKER_BATCH_RUNNER_H_
