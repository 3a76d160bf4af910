// Sweeper: the timers of the job lifecycle, one pass a second on a thread of its own.
// A pass returns jobs whose lease expired to the queue (Store::ExpireLeases), settles
// merged and held jobs, queues the validation jobs whose GPU has arrived (Revalidator),
// and marks workers silent for longer than a lease as lost. Other components' housekeeping
// (source archive collection) rides along as periodic tasks. A failing step is logged and
// the pass goes on: the next pass tries again.
#ifndef FARM_DAEMON_SCHED_SWEEPER_H_
#define FARM_DAEMON_SCHED_SWEEPER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/sched/revalidation.h"
#include "daemon/store/store.h"

namespace farm::sched {

// A housekeeping task run every `every_passes` passes, the first time in the first pass.
struct SweepTask {
  std::string what;  // names the task in the warning when it fails
  int64_t every_passes = 60;
  std::function<Status()> run;
};

class Sweeper {
 public:
  // `store`, `clock` and `revalidator` outlive the sweeper; `lease_ms` is how long a
  // worker may stay silent before it is lost.
  Sweeper(store::Store* store, const Clock* clock, Revalidator* revalidator, int64_t lease_ms,
          std::vector<SweepTask> tasks, store::InputsKeyFn inputs_key);
  ~Sweeper();
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  // Starts the thread; its first pass is a second later.
  void Start();
  // Ends the thread after the pass in progress. Idempotent.
  void Stop();
  // Pass number `pass` (0, 1, ...), on the caller's thread.
  void RunPass(int64_t pass);

 private:
  void Loop();
  void LoseSilentWorkers();

  store::Store* store_;
  const Clock* clock_;
  Revalidator* revalidator_;
  int64_t lease_ms_;
  std::vector<SweepTask> tasks_;
  store::InputsKeyFn inputs_key_;  // settles held jobs (daemon/builds/build_key.h)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_SWEEPER_H_
