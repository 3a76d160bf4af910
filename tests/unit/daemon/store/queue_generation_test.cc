// Store::QueueGeneration moves on exactly the writes that can give an idle worker a job,
// so that AcquireJob's long polls are not woken by leases, logs and heartbeats.
#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class QueueGenerationTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    ASSERT_OK(
        store_->UpsertWorker({.id = "w1", .name = "one", .state = store::WorkerState::kIdle}));
  }

  int64_t MakeBuild(int jobs) {
    BuildRow b{.recipe_name = "attn-example", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<JobRow> rows(static_cast<size_t>(jobs));
    for (auto& j : rows) j.cell = "cell", j.created_ms = 1, j.max_attempts = 5;
    EXPECT_OK(store_->CreateBuild(&b, &rows));
    return b.id;
  }

  JobRow Lease(int64_t now = 10) {
    auto r = store_->AcquireJob("w1", now, 1000, nullptr);
    EXPECT_OK(r.status());
    EXPECT_TRUE(r.ok() && r->has_value());
    return r.ok() && r->has_value() ? **r : JobRow{};
  }

  // Runs `write` and says whether the queue generation moved (the store's must move too).
  template <typename Write>
  bool Wakes(Write write) {
    int64_t queue = store_->QueueGeneration(), all = store_->Generation();
    write();
    EXPECT_GT(store_->Generation(), all) << "every write moves Generation()";
    return store_->QueueGeneration() != queue;
  }
};

TEST_F(QueueGenerationTest, NewWorkAndWorkerChangesWakePolls) {
  EXPECT_TRUE(Wakes([&] { MakeBuild(2); }));
  EXPECT_TRUE(Wakes([&] {
    ASSERT_OK(
        store_->UpsertWorker({.id = "w2", .name = "two", .state = store::WorkerState::kIdle}));
  }));
  EXPECT_TRUE(Wakes([&] { ASSERT_OK(store_->SetDrainRequested("w2", true)); }));
  EXPECT_TRUE(Wakes([&] { ASSERT_OK(store_->TouchWorker("w2", 50, store::WorkerState::kLost)); }));
}

TEST_F(QueueGenerationTest, LeasesLogsHeartbeatsAndFinishedJobsDoNot) {
  MakeBuild(2);
  JobRow job;
  EXPECT_FALSE(Wakes([&] { job = Lease(); }));
  EXPECT_FALSE(Wakes([&] {
    ASSERT_OK(store_->AppendLogLines(job.id, 1, {{1, 0, "compiling", 11}}).status());
  }));
  // A heartbeat renews the lease and touches the worker without changing its state.
  int64_t queue = store_->QueueGeneration();
  ASSERT_OK(store_->TouchWorker("w1", 12, store::WorkerState::kIdle));
  ASSERT_OK(store_->RenewLeases("w1", 12, 1000).status());
  EXPECT_EQ(store_->QueueGeneration(), queue);
  // Nor does a flip between idle and busy: placement passes over neither.
  EXPECT_FALSE(Wakes([&] { ASSERT_OK(store_->TouchWorker("w1", 13, store::WorkerState::kBusy)); }));
  EXPECT_FALSE(Wakes([&] { ASSERT_OK(store_->TouchWorker("w1", 14, store::WorkerState::kIdle)); }));
  EXPECT_TRUE(
      Wakes([&] { ASSERT_OK(store_->TouchWorker("w1", 15, store::WorkerState::kQuarantined)); }));
  EXPECT_TRUE(Wakes([&] { ASSERT_OK(store_->TouchWorker("w1", 16, store::WorkerState::kBusy)); }));
  EXPECT_FALSE(Wakes([&] {
    auto done = store_->CompleteAttempt({.job_id = job.id, .attempt = 1, .worker_id = "w1"}, 20);
    ASSERT_OK(done.status());
    EXPECT_EQ(done.value(), kJobSucceeded);
  }));
}

TEST_F(QueueGenerationTest, EveryRequeueWakesPolls) {
  MakeBuild(3);
  JobRow infra = Lease();
  EXPECT_TRUE(Wakes([&] {
    auto r = store_->CompleteAttempt(InfraFailure(infra.id, 1, "w1"), 20);
    ASSERT_OK(r.status());
    EXPECT_EQ(r.value(), kJobPending);
  }));
  Lease(30);
  EXPECT_TRUE(Wakes([&] { ASSERT_EQ(store_->ExpireLeases(5000)->size(), 1u); }));
  Lease(6000);
  EXPECT_TRUE(Wakes(
      [&] { ASSERT_EQ(store_->ReleaseWorkerJobs("w1", {}, "restarted", 6100)->size(), 1u); }));
  JobRow failed = Lease(6200);
  auto r = store_->CompleteAttempt({.job_id = failed.id,
                                    .attempt = failed.attempt,
                                    .worker_id = "w1",
                                    .cause = kCauseBuildFailed,
                                    .exit_code = 2},
                                   6300);
  ASSERT_OK(r.status());
  ASSERT_EQ(r.value(), kJobFailed);
  EXPECT_TRUE(Wakes([&] { ASSERT_OK(store_->RetryJob(failed.id, 6400)); }));
}

TEST_F(QueueGenerationTest, LeasableHintFollowsTheQueueAndNotBeforeTimes) {
  MakeBuild(2);
  EXPECT_TRUE(store_->MayHaveLeasableJob(10));
  JobRow first = Lease();
  EXPECT_TRUE(store_->MayHaveLeasableJob(10));  // one job is still queued
  Lease();
  EXPECT_FALSE(store_->MayHaveLeasableJob(10));
  EXPECT_FALSE(store_->AcquireJob("w1", 10, 1000, nullptr)->has_value());
  // A retry that waits until 500 is not leasable before then, and is after.
  auto r = store_->CompleteAttempt(InfraFailure(first.id, 1, "w1", 500), 20);
  ASSERT_OK(r.status());
  ASSERT_EQ(r.value(), kJobPending);
  EXPECT_FALSE(store_->MayHaveLeasableJob(499));
  EXPECT_TRUE(store_->MayHaveLeasableJob(500));
  EXPECT_TRUE(store_->AcquireJob("w1", 500, 1000, nullptr)->has_value());
  EXPECT_FALSE(store_->MayHaveLeasableJob(600));
}

TEST_F(QueueGenerationTest, HintIsRecountedAfterReopening) {
  MakeBuild(1);
  store_.reset();
  auto reopened = under_test_.Open();
  ASSERT_OK(reopened.status());
  store_ = std::move(reopened).value();
  // Unknown after open, so polls must ask the store, which then finds the queued job.
  EXPECT_TRUE(store_->MayHaveLeasableJob(10));
  EXPECT_TRUE(store_->AcquireJob("w1", 10, 1000, nullptr)->has_value());
  EXPECT_FALSE(store_->MayHaveLeasableJob(10));
}

}  // namespace
}  // namespace farm::store
