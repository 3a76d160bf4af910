// FetchScheduler: the threads the pull-through cache's upstream work runs on (page
// fetches, downloads), so that no HTTP thread ever waits on an upstream: a slow index or
// a multi-GB first download holds one of these, never the dashboard's. At most
// `max_in_flight` tasks run at once, at most `max_per_address` of them for one upstream
// address (host:port, upstream::UrlAddress), so one slow upstream cannot take every
// thread from the others; the rest wait in order of arrival, a task whose address is at
// its limit letting later tasks of other addresses pass. At most `max_queued` wait.
//
// Thread-safety: every method may be called from any thread. Tasks run on the
// scheduler's threads and must not wait for other tasks of the scheduler.
#ifndef FARM_DAEMON_MIRROR_FETCH_SCHEDULER_H_
#define FARM_DAEMON_MIRROR_FETCH_SCHEDULER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace farm::mirror {

struct FetchLimits {
  int max_in_flight = 8;
  int max_per_address = 4;
  int max_queued = 10'000;
};

class FetchScheduler {
 public:
  explicit FetchScheduler(FetchLimits limits);
  ~FetchScheduler();  // Stop()
  FetchScheduler(const FetchScheduler&) = delete;
  FetchScheduler& operator=(const FetchScheduler&) = delete;

  // Queues `run` for upstream `address`. `dropped` runs instead (on the caller of Stop)
  // when the scheduler stops before `run` started. ResourceExhausted when max_queued tasks
  // wait already, Unavailable once stopped; neither function runs then.
  Status Submit(const std::string& address, std::function<void()> run,
                std::function<void()> dropped);

  // Stops taking tasks, runs `dropped` of every waiting task and joins the threads once
  // the running tasks returned (the fetcher's cancel flag makes them return soon).
  // Idempotent.
  void Stop();

  int running() const;
  int queued() const;

 private:
  struct Task {
    std::string address;
    std::function<void()> run;
    std::function<void()> dropped;
  };
  void Loop();
  // The first queued task whose address is below its limit; false when none (under mu_).
  bool TakeRunnable(Task* out);

  const FetchLimits limits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::map<std::string, int> per_address_;
  int running_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace farm::mirror

#endif  // FARM_DAEMON_MIRROR_FETCH_SCHEDULER_H_
