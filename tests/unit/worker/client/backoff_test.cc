// The backoff of the worker's retried farmd calls (backoff.h).
#include "worker/client/backoff.h"

#include <cstdint>
#include <vector>

#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

TEST(BackoffTest, DoublesFromHalfASecondToTenSeconds) {
  Backoff b;
  std::vector<int64_t> delays;
  for (int i = 0; i < 7; ++i) delays.push_back(b.NextDelayMs());
  EXPECT_EQ(delays, (std::vector<int64_t>{500, 1000, 2000, 4000, 8000, 10000, 10000}));
  b.Reset();
  EXPECT_EQ(b.NextDelayMs(), 500);
}

}  // namespace
}  // namespace farm::agent
