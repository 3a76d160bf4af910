#include "daemon/sched/retry.h"

#include <algorithm>

#include "daemon/store/ports/job_rows.h"

namespace farm::sched {

RetryPlan PlanRetry(int cause, int attempt, int max_attempts, int64_t backoff_seconds,
                    int64_t now_ms) {
  const int64_t base_ms = std::max<int64_t>(0, backoff_seconds) * 1000;
  if (cause != store::kCauseInfrastructure) return {max_attempts, now_ms + base_ms};
  int64_t wait_ms = base_ms;
  for (int i = 1; i < attempt && wait_ms < kMaxInfrastructureBackoffMs; ++i) wait_ms *= 2;
  return {std::max(max_attempts, kInfrastructureAttempts),
          now_ms + std::min(wait_ms, kMaxInfrastructureBackoffMs)};
}

}  // namespace farm::sched
