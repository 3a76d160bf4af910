#include <gtest/gtest.h>

#include "daemon/api/worker/worker_service.h"

namespace farm::api {
namespace {

TEST(ProgressThrottleTest, OneWritePerJobEveryFewSecondsAndAtOnceForANewAttempt) {
  ProgressThrottle t;
  EXPECT_TRUE(t.Allow(1, 1000));  // the first report of a job is written at once
  EXPECT_TRUE(t.Allow(2, 1000));  // jobs are throttled apart
  EXPECT_FALSE(t.Allow(1, 1000 + ProgressThrottle::kEveryMs - 1));
  EXPECT_TRUE(t.Allow(1, 1000 + ProgressThrottle::kEveryMs));
  EXPECT_FALSE(t.Allow(1, 1000 + ProgressThrottle::kEveryMs + 1));
  t.Forget(1);  // the attempt ended; a retry reports at once
  EXPECT_TRUE(t.Allow(1, 1000 + ProgressThrottle::kEveryMs + 2));
}

}  // namespace
}  // namespace farm::api
