// Shared test fixtures: temporary directories, Status matchers and a fake clock.
#ifndef FARM_TESTS_SUPPORT_TEST_UTIL_H_
#define FARM_TESTS_SUPPORT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"

#define ASSERT_OK(expr)                              \
  do {                                               \
    auto farm_s_ = (expr);                           \
    ASSERT_TRUE(farm_s_.ok()) << farm_s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                              \
  do {                                               \
    auto farm_s_ = (expr);                           \
    EXPECT_TRUE(farm_s_.ok()) << farm_s_.ToString(); \
  } while (0)

namespace farm::testing {

// A fresh directory removed at destruction.
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A clock that moves only when told.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_unix_ms = 1'700'000'000'000) : now_(start_unix_ms) {}
  int64_t NowUnixMs() const override { return now_.load(); }
  int64_t SteadyMs() const override { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }
  void Set(int64_t unix_ms) { now_ = unix_ms; }

 private:
  std::atomic<int64_t> now_;
};

// A ProcessRunner that records the argv of each process it is asked to start and starts
// none (Internal "not started"): for code whose behaviour under test is what it would run.
class RecordingRunner final : public ProcessRunner {
 public:
  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override {
    started.push_back(spec.argv);
    return Status::Internal("not started");
  }
  std::vector<std::vector<std::string>> started;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_TEST_UTIL_H_
