// What a principal holds (Store::GetPrincipalUsage), kept by the database's triggers as
// builds, jobs, logs, wheels and source archives change: on SQLite and on PostgreSQL.
#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class PrincipalUsageTest : public StoreTest {
 protected:
  // A build of `who` with `jobs` jobs (each reusing `reused_from` when > 0) and a recipe
  // of `recipe_bytes`; returns its job ids.
  std::vector<int64_t> Build(const std::string& who, int jobs, size_t recipe_bytes,
                             int64_t reused_from = 0) {
    BuildRow b{.recipe_name = "r",
               .recipe = std::string(recipe_bytes, 'r'),
               .submitted_by = who,
               .created_ms = 1};
    std::vector<JobRow> rows(static_cast<size_t>(jobs));
    for (auto& j : rows) j.cell = "cell", j.created_ms = 1, j.reused_from = reused_from;
    EXPECT_OK(store_->CreateBuild(&b, &rows));
    std::vector<int64_t> ids;
    for (const auto& j : rows) ids.push_back(j.id);
    build_ids_.push_back(b.id);
    return ids;
  }

  PrincipalUsage Usage(const std::string& who) {
    auto u = store_->GetPrincipalUsage(who);
    EXPECT_OK(u.status());
    return u.ok() ? u.value() : PrincipalUsage{-1, -1};
  }

  std::vector<int64_t> build_ids_;
};

TEST_F(PrincipalUsageTest, QueuedJobsFollowEveryStateChange) {
  std::vector<int64_t> jobs = Build("alice", 2, 100);
  Build("bob", 1, 50);
  EXPECT_EQ(Usage("alice").queued_jobs, 2);
  EXPECT_EQ(Usage("bob").queued_jobs, 1);
  EXPECT_EQ(Usage("nobody").queued_jobs, 0);
  auto leased = store_->AcquireJob("w1", 10, 100000, nullptr);  // alice's first: running
  ASSERT_OK(leased.status());
  ASSERT_EQ((*leased)->id, jobs[0]);
  EXPECT_EQ(Usage("alice").queued_jobs, 2);
  ASSERT_OK(
      store_->CompleteAttempt({.job_id = jobs[0], .attempt = 1, .worker_id = "w1"}, 20).status());
  EXPECT_EQ(Usage("alice").queued_jobs, 1);
  ASSERT_OK(store_->CancelBuild(build_ids_[0], 30, "alice"));
  EXPECT_EQ(Usage("alice").queued_jobs, 0);
  ASSERT_OK(store_->RetryJob(jobs[1], 40));
  EXPECT_EQ(Usage("alice").queued_jobs, 1);
  EXPECT_EQ(Usage("bob").queued_jobs, 1);
}

TEST_F(PrincipalUsageTest, StoredBytesCountRecipesLogsUploadedWheelsAndSources) {
  std::vector<int64_t> jobs = Build("alice", 1, 100);
  EXPECT_EQ(Usage("alice").stored_bytes, 100);
  ASSERT_OK(store_->AcquireJob("w1", 10, 100000, nullptr).status());
  ASSERT_OK(store_->AppendLogLines(jobs[0], 1, {{1, 1, "abc", 1}, {2, 1, "", 2}}).status());
  EXPECT_EQ(Usage("alice").stored_bytes, 100 + 4 + 1);  // each line with its line break
  ASSERT_OK(
      store_
          ->InsertArtifact(
              {.job_id = jobs[0], .attempt = 1, .filename = "a.whl", .sha256 = "ab", .size = 3000})
          .status());
  ASSERT_OK(
      store_->CompleteAttempt({.job_id = jobs[0], .attempt = 1, .worker_id = "w1"}, 20).status());
  EXPECT_EQ(Usage("alice").stored_bytes, 3105);
  // A job answered from alice's wheels holds copies of her rows, not new bytes.
  Build("carol", 1, 70, /*reused_from=*/jobs[0]);
  EXPECT_EQ(Usage("carol").stored_bytes, 70);
  EXPECT_EQ(Usage("carol").queued_jobs, 0);
  EXPECT_EQ(Usage("alice").stored_bytes, 3105);
  // Source archives count for their uploader until they are collected; an archive
  // uploaded again by someone else is not theirs.
  SourceArchiveRow src{.sha256 = std::string(64, 'd'),
                       .size = 500,
                       .files = 1,
                       .uploaded_by = "dave",
                       .created_ms = 1,
                       .last_used_ms = 1};
  ASSERT_OK(store_->RecordSourceArchive(src));
  src.uploaded_by = "erin";
  ASSERT_OK(store_->RecordSourceArchive(src));
  EXPECT_EQ(Usage("dave").stored_bytes, 500);
  EXPECT_EQ(Usage("erin").stored_bytes, 0);
  auto forgotten = store_->ForgetSourceArchive(src.sha256, 1000);
  ASSERT_OK(forgotten.status());
  ASSERT_TRUE(forgotten.value());
  EXPECT_EQ(Usage("dave").stored_bytes, 0);
}

}  // namespace
}  // namespace farm::store
