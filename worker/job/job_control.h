// JobControl: how other threads stop a running job. The heartbeat thread (cancel from
// farmd), the job's own timeout and worker shutdown call Stop(); the job thread registers
// each child process it runs so Stop() can kill it. Thread-safe.
#ifndef FARM_WORKER_JOB_JOB_CONTROL_H_
#define FARM_WORKER_JOB_JOB_CONTROL_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/process.h"
#include "farm/v1/types.pb.h"
#include "worker/job/build_progress.h"

namespace farm::agent {

// SIGTERM to a build's process group, then SIGKILL after this long.
inline constexpr int64_t kKillGraceMs = 5000;

class JobControl {
 public:
  // Records why the job must end and kills the process it runs now, if any. The first
  // cause wins; later calls only repeat the kill.
  void Stop(farm::v1::AttemptCause cause, const std::string& detail) {
    std::lock_guard lock(mu_);
    if (cause_ == farm::v1::ATTEMPT_CAUSE_UNSPECIFIED) {
      cause_ = cause;
      detail_ = detail;
    }
    if (process_ != nullptr) process_->Kill(kKillGraceMs);
  }

  // Registers the child the job runs now (nullptr when it ended). A job stopped before
  // its child started gets the child killed at once.
  void SetProcess(Process* process) {
    std::lock_guard lock(mu_);
    process_ = process;
    if (process_ != nullptr && cause_ != farm::v1::ATTEMPT_CAUSE_UNSPECIFIED) {
      process_->Kill(kKillGraceMs);
    }
  }

  bool stopped() const {
    std::lock_guard lock(mu_);
    return cause_ != farm::v1::ATTEMPT_CAUSE_UNSPECIFIED;
  }
  farm::v1::AttemptCause cause() const {
    std::lock_guard lock(mu_);
    return cause_;
  }
  std::string detail() const {
    std::lock_guard lock(mu_);
    return detail_;
  }

  // Set once farmd accepted the attempt's completion report: heartbeats stop listing the
  // job, and a cancel for it that crossed the report is moot.
  std::atomic<bool> reported{false};

  // Last log seq handed to the log shipper, reported in heartbeats.
  std::atomic<int64_t> log_seq{0};

  // The build's compile progress and memory, reported in heartbeats.
  BuildProgress progress;

 private:
  mutable std::mutex mu_;
  Process* process_ = nullptr;
  farm::v1::AttemptCause cause_ = farm::v1::ATTEMPT_CAUSE_UNSPECIFIED;
  std::string detail_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_JOB_CONTROL_H_
