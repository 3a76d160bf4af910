// In-flight merging in the SQLite store: a job whose build key equals a pending or running
// job's waits for it and completes with its artifacts, or is released to build itself when
// that job fails (a failed result is never reused).
#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

class MergeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenSqliteStore(dir_.path() + "/farm.db");
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
  }

  // A one-job build with `key`; returns the job.
  JobRow Submit(const std::string& key, bool merge = true) {
    BuildRow b{.recipe_name = "r", .submitted_by = "t", .created_ms = 1000};
    std::vector<JobRow> jobs{JobRow{.cell = "c", .build_key = key, .created_ms = 1000}};
    BuildLinks links{.merge_in_flight = merge};
    EXPECT_OK(store_->CreateBuildLinked(&b, &jobs, &links));
    return store_->GetJob(jobs[0].id).value();
  }

  std::optional<JobRow> Acquire() {
    auto j = store_->AcquireJob("w1", 2000, 60000, nullptr);
    EXPECT_OK(j.status());
    return j.ok() ? j.value() : std::nullopt;
  }

  void Complete(const JobRow& job, bool ok) {
    if (ok) {
      ArtifactRow a{.job_id = job.id,
                    .attempt = job.attempt,
                    .filename = "x.whl",
                    .sha256 = std::string(64, 'f'),
                    .size = 3,
                    .created_ms = 2500};
      ASSERT_OK(store_->InsertArtifact(a).status());
    }
    CompletionReport r{.job_id = job.id,
                       .attempt = job.attempt,
                       .worker_id = "w1",
                       .cause = ok ? kCauseCompleted : kCauseBuildFailed,
                       .exit_code = ok ? 0 : 1};
    ASSERT_OK(store_->CompleteAttempt(r, 3000).status());
  }

  farm::testing::ScopedTempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(MergeStoreTest, ADuplicateWaitsAndCompletesWithTheLeadersWheel) {
  JobRow leader = Submit("k1");
  JobRow follower = Submit("k1");
  EXPECT_EQ(follower.state, kJobPending);
  EXPECT_EQ(follower.error,
            "waiting for job " + std::to_string(leader.id) + ", an identical build in flight");
  auto got = Acquire();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, leader.id);
  EXPECT_FALSE(Acquire());  // the follower is never leased
  // Also while the leader runs, a third identical submission merges onto the leader.
  JobRow third = Submit("k1");
  EXPECT_EQ(store_->ResolveMergedJobs(2500).value().size(), 0u);
  Complete(*got, true);
  auto settled = store_->ResolveMergedJobs(3100);
  ASSERT_OK(settled.status());
  EXPECT_EQ(settled->size(), 2u);
  for (const JobRow& j : {follower, third}) {
    JobRow now = store_->GetJob(j.id).value();
    EXPECT_EQ(now.state, kJobSucceeded);
    EXPECT_EQ(now.reused_from, leader.id);
    EXPECT_EQ(now.error, "");
    auto arts = store_->ListArtifacts(j.id).value();
    ASSERT_EQ(arts.size(), 1u);
    EXPECT_EQ(arts[0].sha256, std::string(64, 'f'));
    EXPECT_EQ(store_->GetBuild(now.build_id)->state, kBuildSucceeded);
  }
  // Nothing left to settle; a later identical submission has no leader in flight.
  EXPECT_TRUE(store_->ResolveMergedJobs(3200)->empty());
  EXPECT_EQ(Submit("k1").error, "");
}

TEST_F(MergeStoreTest, AFailedLeaderReleasesTheDuplicateToBuild) {
  JobRow leader = Submit("k2");
  JobRow follower = Submit("k2");
  auto got = Acquire();
  ASSERT_TRUE(got);
  Complete(*got, false);
  ASSERT_EQ(store_->ResolveMergedJobs(3100)->size(), 1u);
  JobRow now = store_->GetJob(follower.id).value();
  EXPECT_EQ(now.state, kJobPending);
  EXPECT_EQ(now.reused_from, 0);
  auto next = Acquire();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, follower.id);
  EXPECT_NE(leader.id, follower.id);
}

TEST_F(MergeStoreTest, NoMergeWithoutAKeyOrWhenNotAsked) {
  Submit("");
  EXPECT_EQ(Submit("").error, "");
  Submit("k3");
  EXPECT_EQ(Submit("k3", /*merge=*/false).error, "");
}

TEST_F(MergeStoreTest, ACancelledDuplicateIsDropped) {
  Submit("k4");
  JobRow follower = Submit("k4");
  ASSERT_OK(store_->CancelBuild(follower.build_id, 2000, "test"));
  EXPECT_TRUE(store_->ResolveMergedJobs(2100)->empty());
  EXPECT_EQ(store_->GetJob(follower.id)->state, kJobCancelled);
}

}  // namespace
}  // namespace farm::store
