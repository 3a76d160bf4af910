// The lifecycle timers over a real SQLite store and a clock that moves only when told:
// a pass gives an expired lease's job back to the queue and marks a silent worker lost,
// leaves a fresh lease and a heard-from worker alone, and runs housekeeping tasks at
// their period, going on past one that fails.
#include "daemon/sched/sweeper.h"

#include <gtest/gtest.h>

#include "daemon/builds/build_key.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::sched {
namespace {

constexpr int64_t kLeaseMs = 30'000;

class SweeperTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    store::BuildRow b{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<store::JobRow> rows(1);
    rows[0].max_attempts = 3;
    ASSERT_OK(store_->CreateBuild(&b, &rows));
    job_id_ = rows[0].id;
    int64_t now = clock_.NowUnixMs();
    ASSERT_OK(store_->UpsertWorker({"w1", "worker-1", "", store::WorkerState::kBusy, now, now}));
    auto leased = store_->LeaseJobs({{job_id_, "w1"}}, now, kLeaseMs);
    ASSERT_OK(leased.status());
    ASSERT_TRUE(leased->at(0).has_value());
  }

  int64_t job_id_ = 0;
};

TEST_F(SweeperTest, AnExpiredLeaseIsRequeuedAndASilentWorkerLost) {
  Sweeper sweeper(store_.get(), &clock_, nullptr, kLeaseMs, {}, builds::KeyWithInputs);
  clock_.Advance(kLeaseMs - 1);
  sweeper.RunPass(1);
  EXPECT_EQ(store_->GetJob(job_id_)->state, store::kJobRunning);
  EXPECT_EQ(store_->GetWorker("w1")->state, store::WorkerState::kBusy);

  clock_.Advance(2);
  sweeper.RunPass(2);
  auto job = store_->GetJob(job_id_);
  ASSERT_OK(job.status());
  EXPECT_EQ(job->state, store::kJobPending);  // attempt 1 of 3 lost: queued again
  EXPECT_EQ(store_->GetWorker("w1")->state, store::WorkerState::kLost);
}

TEST_F(SweeperTest, TasksRunAtTheirPeriodAndAFailingOneStopsNothing) {
  int fast = 0, slow = 0;
  std::vector<SweepTask> tasks = {{.what = "a failing task",
                                   .every_passes = 1,
                                   .run =
                                       [&fast] {
                                         ++fast;
                                         return Status::Internal("disk full");
                                       }},
                                  {.what = "a slow task", .every_passes = 60, .run = [&slow] {
                                     ++slow;
                                     return Status::Ok();
                                   }}};
  Sweeper sweeper(store_.get(), &clock_, nullptr, kLeaseMs, std::move(tasks),
                  builds::KeyWithInputs);
  clock_.Advance(kLeaseMs + 1);
  for (int64_t pass = 0; pass < 61; ++pass) sweeper.RunPass(pass);
  EXPECT_EQ(fast, 61);
  EXPECT_EQ(slow, 2);  // passes 0 and 60
  EXPECT_EQ(store_->GetJob(job_id_)->state, store::kJobPending);
}

TEST_F(SweeperTest, StopEndsTheThreadAndIsIdempotent) {
  Sweeper sweeper(store_.get(), &clock_, nullptr, kLeaseMs, {}, builds::KeyWithInputs);
  sweeper.Start();
  sweeper.Stop();
  sweeper.Stop();
}

}  // namespace
}  // namespace farm::sched
