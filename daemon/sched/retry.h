// When a failed attempt runs again (docs/reliability.md, "Retries"). The recipe's retry
// section rules the recipe's own failures (retry_build_failures): up to max_attempts
// attempts, backoff_seconds apart. Infrastructure failures (an upstream index or mirror
// down, a disk full, a validation that could not run) are the farm's, and the outages
// behind them last minutes: they run again with a backoff that doubles from the recipe's
// up to kMaxInfrastructureBackoffMs, for at least kInfrastructureAttempts attempts (about
// 20 minutes with the default 10 s). Pure functions; thread-safe.
#ifndef FARM_DAEMON_SCHED_RETRY_H_
#define FARM_DAEMON_SCHED_RETRY_H_

#include <cstdint>

namespace farm::sched {

inline constexpr int kInfrastructureAttempts = 8;
inline constexpr int64_t kMaxInfrastructureBackoffMs = 600'000;

struct RetryPlan {
  int max_attempts = 0;       // the job fails once this many attempts ended
  int64_t not_before_ms = 0;  // the next attempt is leased no earlier
};

// The plan after attempt `attempt` (1-based) of a job ended with `cause` (store's
// kCause*), for a job of `max_attempts` whose recipe backs off `backoff_seconds`.
RetryPlan PlanRetry(int cause, int attempt, int max_attempts, int64_t backoff_seconds,
                    int64_t now_ms);

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_RETRY_H_
