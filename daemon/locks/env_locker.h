// EnvLocker: the lock of every provisioned cell a build needs, resolved by farmd at submit
// (docs/environments.md, "Locks"). A cell's environment (recipe::CellEnvironment: its
// Python, platform, torch release on the index of its CUDA, build requirements) becomes a
// pip resolution on that index (common/lock/pip_resolver.h, through farmd's pull-through
// cache), and its result a lock (PEP 751) recorded in the store by digest. The digest goes
// into the job's build key, so a resubmission with nothing changed upstream is answered
// from the store, and into the job's needs, so a retry installs the same lock whatever
// upstream did since. A recipe's own lock (environment.lock) is used instead, after pip
// has shown it complete for the cell.
//
// Each distinct environment is resolved once per call, at most `max_parallel` at a time;
// an unreachable index is tried `attempts` times with a doubling pause, but no attempt is
// started that could not end inside `retry_budget_ms` of the first one: submit waits for the
// locks, and an answer that the index is down beats a client's deadline passing (farmctl's
// is 30 s) while pip tries it a third time. Thread-safe: each
// call works on its own data (the resolver and store must be thread-safe).
#ifndef FARM_DAEMON_LOCKS_ENV_LOCKER_H_
#define FARM_DAEMON_LOCKS_ENV_LOCKER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/lock/env_lock.h"
#include "common/lock/pip_resolver.h"
#include "common/status.h"
#include "daemon/store/ports/lock_store.h"
#include "farm/v1/types.pb.h"

namespace farm::locks {

// Where the packages of a torch CUDA variant come from.
struct IndexRoute {
  std::string name;          // the farm's name of the index ("cu130"), recorded in locks
  std::string resolve_url;   // the index pip reads (farmd's pull-through route)
  std::string upstream_url;  // the index itself, recorded as each package's index
};
// The route of variant `variant` ("cu130", "cpu"); FailedPrecondition naming the flag to
// give when farmd serves no index for it.
using IndexRoutes = std::function<Result<IndexRoute>(const std::string& variant)>;

struct LockerOptions {
  std::string glibc = "2.28";  // the oldest glibc the locked wheels must run with
  int max_parallel = 3;
  int attempts = 3;  // of an unreachable index
  int64_t retry_delay_ms = 2000;
  // Another attempt starts only if the time since the first, its pause and the last
  // attempt's length stay inside it (a slow host makes pip's start, not the index, slow).
  int64_t retry_budget_ms = 15000;
  std::function<void(int64_t ms)> sleep;  // null: the thread sleeps
};

// One cell's lock, as recorded.
struct CellLock {
  std::string digest;
  lock::EnvLock lock;
};

class EnvLocker {
 public:
  // `resolver`, `store` and `clock` must outlive the locker.
  EnvLocker(lock::Resolver* resolver, store::LockStore* store, IndexRoutes routes,
            const Clock* clock, LockerOptions options);

  // The locks of `specs`, one per spec in order. A spec with a `lock` (the recipe's
  // environment.lock, copied in by the caller) is checked instead of resolved. Failures:
  // InvalidArgument, the recipe's (no wheel satisfies a requirement for the cell, the
  // requirements conflict, the recipe's lock is incomplete or names files the index does
  // not list), naming the cell; FailedPrecondition when farmd serves no index for a cell's
  // CUDA; Unavailable when an index could not be read after every attempt.
  Result<std::vector<CellLock>> LockAll(const std::vector<farm::v1::ProvisionSpec>& specs);

  // How many resolutions this locker ran (metrics, tests, benchmarks).
  int64_t resolutions() const;

 private:
  Result<lock::EnvLock> Lock(const farm::v1::ProvisionSpec& spec);
  Result<lock::EnvLock> Resolve(const lock::ResolveRequest& request);
  Result<lock::EnvLock> CheckOwnLock(const farm::v1::ProvisionSpec& spec,
                                     lock::ResolveRequest request);

  lock::Resolver* resolver_;
  store::LockStore* store_;
  IndexRoutes routes_;
  const Clock* clock_;
  LockerOptions options_;
  std::atomic<int64_t> resolutions_{0};
};

// What pip resolves for `spec`: torch at the cell's release (`torch==2.11.0`) or the newest
// of its minor (`torch==2.11.*`), the build requirements, and the recipe's override pins
// for that release.
std::vector<std::string> Requirements(const farm::v1::ProvisionSpec& spec);

// "Python 3.12, torch 2.11 on cu130, linux_x86_64", for messages.
std::string DescribeCell(const farm::v1::ProvisionSpec& spec);

// Locks what the jobs of a build of `recipe` install, job i building in cells[i] with
// needs[i]: its cell's environment (needs[i].lock_digest) and, for a stable-ABI build,
// every other cell its wheel is validated in (needs[i].validate_locks), all in one LockAll.
// Nothing for a recipe without environment:.
Status LockJobs(EnvLocker& locker, const farm::v1::Recipe& recipe,
                const std::vector<farm::v1::MatrixCell>& cells,
                std::vector<farm::v1::JobNeeds>* needs);

}  // namespace farm::locks

#endif  // FARM_DAEMON_LOCKS_ENV_LOCKER_H_
