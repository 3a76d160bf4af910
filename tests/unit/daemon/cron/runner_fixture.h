// The set-up the runner's tests share: a ScheduleRunner over a real SQLite store in a
// temporary folder, a fake clock and a StoreSubmitter. Reopen() is a farmd restart.
#ifndef FARM_TESTS_UNIT_DAEMON_CRON_RUNNER_FIXTURE_H_
#define FARM_TESTS_UNIT_DAEMON_CRON_RUNNER_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "daemon/cron/runner.h"
#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/cron/store_submitter.h"

namespace farm::cron {

class RunnerFixture : public ::testing::Test {
 protected:
  // The runner goes first: it may hold fakes of the derived fixture.
  void TearDown() override { runner_.reset(); }

  // The runner the derived fixture's test needs, over store_, clock_ and submitter_.
  virtual std::unique_ptr<ScheduleRunner> MakeRunner() = 0;

  // A farmd restart: a new store connection and a new runner over the same file.
  void Reopen() {
    runner_.reset();
    store_.reset();
    auto store = store::OpenSqliteStore(dir_.path() + "/farm.db");
    ASSERT_OK(store.status());
    store_ = std::move(store).value();
    raw_store_ = store_.get();
    runner_ = MakeRunner();
  }

  std::vector<store::ScheduleRunRow> Runs(int64_t id) {
    auto runs = store_->ListScheduleRuns(id, 100);
    EXPECT_OK(runs.status());
    return runs.ok() ? runs.value() : std::vector<store::ScheduleRunRow>{};
  }

  farm::testing::ScopedTempDir dir_;
  farm::testing::FakeClock clock_;
  store::Store* raw_store_ = nullptr;
  StoreSubmitter submitter_{&raw_store_, &clock_};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<ScheduleRunner> runner_;
};

}  // namespace farm::cron

#endif  // FARM_TESTS_UNIT_DAEMON_CRON_RUNNER_FIXTURE_H_
