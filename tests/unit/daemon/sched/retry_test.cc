#include "daemon/sched/retry.h"

#include <gtest/gtest.h>

#include "daemon/store/ports/job_rows.h"

namespace farm::sched {
namespace {

constexpr int64_t kNow = 1'000'000;

TEST(RetryTest, TheRecipesFailuresKeepItsRetry) {
  for (int cause :
       {store::kCauseBuildFailed, store::kCauseValidationFailed, store::kCauseTimedOut}) {
    RetryPlan plan = PlanRetry(cause, 2, 3, 10, kNow);
    EXPECT_EQ(plan.max_attempts, 3) << cause;
    EXPECT_EQ(plan.not_before_ms, kNow + 10'000) << cause;
  }
}

TEST(RetryTest, InfrastructureBacksOffForMinutes) {
  // The default recipe (3 attempts, 10 s): an upstream outage is retried for about 20
  // minutes, not three times in 20 s.
  int64_t waited_ms = 0;
  std::vector<int64_t> waits;
  for (int attempt = 1;; ++attempt) {
    RetryPlan plan = PlanRetry(store::kCauseInfrastructure, attempt, 3, 10, kNow);
    EXPECT_EQ(plan.max_attempts, kInfrastructureAttempts);
    if (attempt >= plan.max_attempts) break;  // the store fails the job now
    waits.push_back((plan.not_before_ms - kNow) / 1000);
    waited_ms += plan.not_before_ms - kNow;
  }
  EXPECT_EQ(waits, (std::vector<int64_t>{10, 20, 40, 80, 160, 320, 600}));
  EXPECT_GE(waited_ms, 20 * 60'000);
  // Capped at 10 minutes however long the recipe's backoff.
  EXPECT_EQ(PlanRetry(store::kCauseInfrastructure, 5, 3, 3600, kNow).not_before_ms,
            kNow + kMaxInfrastructureBackoffMs);
  // A recipe asking for more attempts keeps them; a backoff of 0 retries at once.
  EXPECT_EQ(PlanRetry(store::kCauseInfrastructure, 1, 10, 0, kNow).max_attempts, 10);
  EXPECT_EQ(PlanRetry(store::kCauseInfrastructure, 6, 10, 0, kNow).not_before_ms, kNow);
  // Nothing overflows on odd inputs.
  EXPECT_EQ(PlanRetry(store::kCauseInfrastructure, 1'000'000, 3, 10, kNow).not_before_ms,
            kNow + kMaxInfrastructureBackoffMs);
  EXPECT_EQ(PlanRetry(store::kCauseInfrastructure, 1, 3, -5, kNow).not_before_ms, kNow);
}

}  // namespace
}  // namespace farm::sched
