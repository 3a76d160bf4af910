// The dispatcher's store calls: the leasable ids in dispatch order, jobs by id, and a batch
// of leases in one transaction that skips jobs no longer leasable.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class LeaseBatchTest : public StoreTest {
 protected:
  std::vector<int64_t> MakeBuild(int jobs, int priority = 0) {
    BuildRow b{.recipe_name = "r",
               .recipe = "r",
               .priority = priority,
               .submitted_by = "t",
               .created_ms = 1};
    std::vector<JobRow> rows(static_cast<size_t>(jobs));
    for (auto& j : rows) {
      j.cell = "cell ✓", j.created_ms = 1, j.max_attempts = 3, j.priority = priority;
    }
    EXPECT_OK(store_->CreateBuild(&b, &rows));
    std::vector<int64_t> ids;
    for (const auto& j : rows) ids.push_back(j.id);
    return ids;
  }
};

TEST_F(LeaseBatchTest, LeasableIdsComeInDispatchOrder) {
  auto low = MakeBuild(2);
  auto high = MakeBuild(2, 5);
  auto ids = store_->ListLeasableJobIds(10, 100);
  ASSERT_OK(ids.status());
  EXPECT_EQ(*ids, (std::vector<int64_t>{high[0], high[1], low[0], low[1]}));
  ids = store_->ListLeasableJobIds(10, 1);
  ASSERT_OK(ids.status());
  EXPECT_EQ(*ids, (std::vector<int64_t>{high[0]}));
  EXPECT_TRUE(store_->ListLeasableJobIds(10, 0)->empty());
}

TEST_F(LeaseBatchTest, GetJobsSkipsUnknownIdsAndTakesEmptyLists) {
  auto ids = MakeBuild(3);
  auto none = store_->GetJobs({});
  ASSERT_OK(none.status());
  EXPECT_TRUE(none->empty());
  auto some = store_->GetJobs({ids[2], 999999, ids[0], std::numeric_limits<int64_t>::max()});
  ASSERT_OK(some.status());
  ASSERT_EQ(some->size(), 2u);
  for (const auto& j : *some) EXPECT_EQ(j.cell, "cell ✓");
}

TEST_F(LeaseBatchTest, BatchLeasesOnlyWhatIsStillLeasable) {
  auto ids = MakeBuild(3);
  ASSERT_OK(store_->UpsertWorker({.id = "w1", .name = "one", .state = store::WorkerState::kIdle}));
  // One job is taken by the single-lease path first: the batch must not lease it again.
  auto first = store_->AcquireJob("w9", 10, 1000, nullptr);
  ASSERT_OK(first.status());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->id, ids[0]);
  auto leased = store_->LeaseJobs(
      {{ids[0], "w1"}, {ids[1], "w1"}, {ids[2], "🚀-worker"}, {424242, "w1"}}, 20, 1000);
  ASSERT_OK(leased.status());
  ASSERT_EQ(leased->size(), 4u);
  EXPECT_FALSE((*leased)[0].has_value());
  ASSERT_TRUE((*leased)[1].has_value());
  EXPECT_EQ((*leased)[1]->attempt, 1);
  EXPECT_EQ((*leased)[1]->worker_id, "w1");
  EXPECT_EQ((*leased)[1]->lease_expiry_ms, 1020);
  ASSERT_TRUE((*leased)[2].has_value());
  EXPECT_EQ((*leased)[2]->worker_id, "🚀-worker");
  EXPECT_FALSE((*leased)[3].has_value());
  // Written through: the jobs run, each with one attempt, and nothing is leasable.
  for (int64_t id : ids) {
    auto job = store_->GetJob(id);
    ASSERT_OK(job.status());
    EXPECT_EQ(job->state, kJobRunning);
    EXPECT_EQ(store_->ListAttempts(id)->size(), 1u);
  }
  EXPECT_TRUE(store_->ListLeasableJobIds(30, 100)->empty());
  EXPECT_FALSE(store_->MayHaveLeasableJob(30));
  auto empty = store_->LeaseJobs({}, 40, 1000);
  ASSERT_OK(empty.status());
  EXPECT_TRUE(empty->empty());
}

TEST_F(LeaseBatchTest, HeldAndBackedOffJobsAreNotLeasable) {
  auto ids = MakeBuild(1);
  auto job = store_->AcquireJob("w1", 10, 1000, nullptr);
  ASSERT_OK(job.status());
  // An infrastructure failure with a backoff: pending, but not before 5000.
  ASSERT_OK(store_->CompleteAttempt(InfraFailure(ids[0], 1, "w1", 5000), 20).status());
  EXPECT_TRUE(store_->ListLeasableJobIds(100, 10)->empty());
  auto early = store_->LeaseJobs({{ids[0], "w1"}}, 100, 1000);
  ASSERT_OK(early.status());
  EXPECT_FALSE((*early)[0].has_value());
  EXPECT_EQ(*store_->ListLeasableJobIds(5000, 10), std::vector<int64_t>{ids[0]});
  auto later = store_->LeaseJobs({{ids[0], "w1"}}, 5000, 1000);
  ASSERT_OK(later.status());
  ASSERT_TRUE((*later)[0].has_value());
  EXPECT_EQ((*later)[0]->attempt, 2);
}

TEST_F(LeaseBatchTest, QueueListenerHearsNewWorkNotLeases) {
  std::atomic<int> heard{0};
  store_->SetQueueListener([&heard] { heard++; });
  auto ids = MakeBuild(2);
  EXPECT_EQ(heard.load(), 1);
  ASSERT_OK(store_->LeaseJobs({{ids[0], "w1"}}, 10, 1000).status());
  EXPECT_EQ(heard.load(), 1);
}

}  // namespace
}  // namespace farm::store
