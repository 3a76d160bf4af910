// Clock: the only way farm code reads time, so tests can drive time with a fake
// (FakeClock in tests/support/test_util.h). Implementations are thread-safe.
#ifndef FARM_COMMON_CLOCK_H_
#define FARM_COMMON_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace farm {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch (wall time, for records and cron).
  virtual int64_t NowUnixMs() const = 0;
  // Monotonic milliseconds, for leases and timeouts.
  virtual int64_t SteadyMs() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowUnixMs() const override;
  int64_t SteadyMs() const override;
};

// Returns the process-wide real clock.
Clock& RealClock();

// Formats Unix milliseconds as RFC 3339 UTC, "2026-11-22T08:00:00.000Z"; "" for 0.
std::string FormatRfc3339(int64_t unix_ms);

}  // namespace farm

#endif  // FARM_COMMON_CLOCK_H_
