#include "daemon/sched/sweeper.h"

#include <chrono>
#include <utility>

#include "common/log.h"

namespace farm::sched {

Sweeper::Sweeper(store::Store* store, const Clock* clock, Revalidator* revalidator,
                 int64_t lease_ms, std::vector<SweepTask> tasks, store::InputsKeyFn inputs_key)
    : store_(store),
      clock_(clock),
      revalidator_(revalidator),
      lease_ms_(lease_ms),
      tasks_(std::move(tasks)),
      inputs_key_(std::move(inputs_key)) {}

Sweeper::~Sweeper() { Stop(); }

void Sweeper::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Sweeper::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sweeper::Loop() {
  for (int64_t pass = 0;; ++pass) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_; })) return;
    }
    RunPass(pass);
  }
}

void Sweeper::RunPass(int64_t pass) {
  for (const SweepTask& task : tasks_) {
    if (task.every_passes <= 0 || pass % task.every_passes != 0) continue;
    Status s = task.run();
    if (!s.ok()) log::Warn(task.what + " failed: " + s.ToString());
  }
  auto expired = store_->ExpireLeases(clock_->NowUnixMs());
  if (!expired.ok()) {
    log::Warn("lease sweep failed: " + expired.status().ToString());
  } else {
    for (int64_t id : expired.value()) log::Warn("job " + std::to_string(id) + " lost its worker");
  }
  auto merged = store_->ResolveMergedJobs(clock_->NowUnixMs());
  if (!merged.ok()) log::Warn("settling merged jobs failed: " + merged.status().ToString());
  auto held = store_->ResolveHeldJobs(clock_->NowUnixMs(), inputs_key_);
  if (!held.ok()) log::Warn("settling held jobs failed: " + held.status().ToString());
  if (revalidator_ != nullptr) {
    auto revalidated = revalidator_->RunOnce();
    if (!revalidated.ok()) {
      log::Warn("queueing validation jobs failed: " + revalidated.status().ToString());
    }
  }
  LoseSilentWorkers();
}

void Sweeper::LoseSilentWorkers() {
  auto workers = store_->ListWorkers();
  if (!workers.ok()) return;
  int64_t now = clock_->NowUnixMs();
  for (const auto& w : workers.value()) {
    if (w.state != store::WorkerState::kLost && now - w.last_heartbeat_ms > lease_ms_) {
      (void)store_->TouchWorker(w.id, w.last_heartbeat_ms, store::WorkerState::kLost);
    }
  }
}

}  // namespace farm::sched
