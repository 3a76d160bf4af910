// BuildProgress: how far a running build is, for the heartbeat. Two sources, the better
// one wins:
//  - the build's own "[n/m]" lines (ninja, which torch.utils.cpp_extension and CMake use,
//    prints one per finished unit): units done of a known total;
//  - the compile cache's statistics log (compile_cache.h): every compile that went through
//    the worker's compiler wrappers, cached or not, so a setup.py build without ninja still
//    shows compiles done (total unknown, 0).
// And the largest RSS of any process of the build so far, sampled from /proc while the
// build runs (each process's own peak, VmHWM), so a running attempt shows a real figure
// before ru_maxrss arrives with its completion.
//
// Thread-safety: the job thread calls Begin/OnLine/End, the heartbeat thread Sample and
// Snapshot; every method may run concurrently with the others.
#ifndef FARM_WORKER_JOB_BUILD_PROGRESS_H_
#define FARM_WORKER_JOB_BUILD_PROGRESS_H_

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace farm::agent {

// Units done and total of a "[n/m]" line ("[12/40] Building CUDA object ...", ANSI colour
// codes before it allowed); nullopt for any other line, "[ 45%]", or n > m.
std::optional<std::pair<int64_t, int64_t>> ParseUnitsLine(const std::string& line);

// The largest VmHWM (bytes) of `root` and every live descendant, read from `proc_dir`
// ("/proc"; tests pass a directory laid out the same way). 0 when none can be read.
int64_t TreePeakRssBytes(pid_t root, const std::string& proc_dir = "/proc");

struct ProgressSnapshot {
  int64_t units_done = 0;
  int64_t units_total = 0;  // 0: unknown
  int64_t peak_rss_bytes = 0;
};

class BuildProgress {
 public:
  explicit BuildProgress(std::string proc_dir = "/proc") : proc_dir_(std::move(proc_dir)) {}

  // The build command started as `pid` (0: do not sample memory, e.g. a container whose
  // processes are not this host's children); `cache_workspace` is the workspace holding
  // its compile-cache statistics log (compile_cache.h), "" without the compile cache.
  void Begin(pid_t pid, const std::string& cache_workspace);
  // Feeds one line of the build's output.
  void OnLine(const std::string& line);
  // The build command ended: no more memory samples; the figures stay.
  void End();
  // Samples the build's memory now (heartbeat thread).
  void Sample();
  ProgressSnapshot Snapshot() const;

 private:
  const std::string proc_dir_;
  mutable std::mutex mu_;
  pid_t pid_ = 0;                 // guarded by mu_
  std::string cache_workspace_;   // guarded by mu_
  int64_t done_ = 0, total_ = 0;  // guarded by mu_; from [n/m] lines, over all ninja runs
  int64_t base_ = 0;              // guarded by mu_; units of the ninja runs before this one
  int64_t peak_rss_ = 0;          // guarded by mu_
};

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_BUILD_PROGRESS_H_
