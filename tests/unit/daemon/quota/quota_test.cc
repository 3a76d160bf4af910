#include "daemon/quota/quota.h"

#include <gtest/gtest.h>

#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::quota {
namespace {

constexpr int64_t kHourMs = 3600 * 1000;

class QuotaTest : public testing::SqliteStoreTest {
 protected:
  QuotaKeeper Keeper(Limits submitter) {
    Policy p;
    p.by_role["submitter"] = submitter;
    return QuotaKeeper(store_.get(), &clock_, p);
  }

  // A build of `jobs` pending jobs with a recipe of `recipe_bytes`, submitted by `who`.
  void Build(const std::string& who, int jobs, size_t recipe_bytes = 10) {
    store::BuildRow b{.recipe_name = "r",
                      .recipe = std::string(recipe_bytes, 'r'),
                      .submitted_by = who,
                      .created_ms = 1};
    std::vector<store::JobRow> rows(static_cast<size_t>(jobs));
    for (auto& j : rows) j.cell = "cell", j.created_ms = 1;
    ASSERT_OK(store_->CreateBuild(&b, &rows));
  }
};

TEST_F(QuotaTest, SubmissionsRefillEvenlyOverTheWindowAndSayWhenToRetry) {
  QuotaKeeper keeper = Keeper({.submissions = 4});
  for (int i = 0; i < 4; ++i) ASSERT_OK(keeper.TakeSubmission("alice", "submitter"));
  Status refused = keeper.TakeSubmission("alice", "submitter");
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("\"alice\" may submit 4 times per hour"), std::string::npos)
      << refused.message();
  // One submission comes back every quarter of the hour.
  EXPECT_EQ(RetryAfterMs(refused), std::optional<int64_t>(15 * 60 * 1000));
  EXPECT_OK(keeper.TakeSubmission("bob", "submitter"));  // another principal: its own bucket
  clock_.Advance(15 * 60 * 1000 - 1000);
  EXPECT_EQ(RetryAfterMs(keeper.TakeSubmission("alice", "submitter")),
            std::optional<int64_t>(1000));
  clock_.Advance(1000);
  EXPECT_OK(keeper.TakeSubmission("alice", "submitter"));
  clock_.Advance(10 * kHourMs);  // a long pause fills the bucket, no more
  for (int i = 0; i < 4; ++i) ASSERT_OK(keeper.TakeSubmission("alice", "submitter"));
  EXPECT_FALSE(keeper.TakeSubmission("alice", "submitter").ok());
}

TEST_F(QuotaTest, RolesWithoutLimitsAndOverridesAreHonoured) {
  QuotaKeeper keeper = Keeper({.submissions = 1, .queued_jobs = 1});
  for (int i = 0; i < 50; ++i) ASSERT_OK(keeper.TakeSubmission("root", "admin"));
  ASSERT_OK(keeper.TakeSubmission("ci", "submitter"));
  EXPECT_FALSE(keeper.TakeSubmission("ci", "submitter").ok());
  ASSERT_OK(keeper.SetOverride({.principal = "ci", .submissions = kUnlimited}));
  for (int i = 0; i < 50; ++i) ASSERT_OK(keeper.TakeSubmission("ci", "submitter"));
  auto limits = keeper.LimitsFor("ci", "submitter");
  ASSERT_OK(limits.status());
  EXPECT_EQ(limits->queued_jobs, 1);  // the fields left at the role's default keep it
  ASSERT_OK(keeper.SetOverride({.principal = "ci", .submissions = 0}));
  Status zero = keeper.TakeSubmission("ci", "submitter");
  EXPECT_EQ(zero.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfterMs(zero), std::nullopt) << zero.message();
  ASSERT_OK(keeper.SetOverride({.principal = "ci"}));  // every field the role's: removed
  EXPECT_FALSE(store_->GetQuotaOverride("ci")->has_value());
}

TEST_F(QuotaTest, SettingALimitKeepsWhatWasUsedThisWindow) {
  QuotaKeeper keeper = Keeper({.submissions = 20});
  for (int i = 0; i < 3; ++i) ASSERT_OK(keeper.TakeSubmission("alice", "submitter"));
  ASSERT_OK(keeper.SetOverride({.principal = "alice", .submissions = 5}));
  auto view = keeper.View("alice", "submitter");
  ASSERT_OK(view.status());
  EXPECT_NEAR(view->submissions_left, 2, 1e-9);  // 5 minus the 3 used, not a full 5
  for (int i = 0; i < 2; ++i) ASSERT_OK(keeper.TakeSubmission("alice", "submitter"));
  EXPECT_FALSE(keeper.TakeSubmission("alice", "submitter").ok());
  // An unlimited principal's submissions count too, should a limit be set on it.
  for (int i = 0; i < 30; ++i) ASSERT_OK(keeper.TakeSubmission("root", "admin"));
  ASSERT_OK(keeper.SetOverride({.principal = "root", .submissions = 10}));
  Status refused = keeper.TakeSubmission("root", "admin");
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.message();
  // Within the window what was used is gone, whatever the limit was.
  clock_.Advance(kHourMs);
  for (int i = 0; i < 10; ++i) ASSERT_OK(keeper.TakeSubmission("root", "admin"));
  EXPECT_FALSE(keeper.TakeSubmission("root", "admin").ok());
}

TEST_F(QuotaTest, QueuedJobsCountPendingAndRunningJobsOfThePrincipalsBuilds) {
  QuotaKeeper keeper = Keeper({.queued_jobs = 5});
  Build("alice", 3);
  Build("bob", 10);
  EXPECT_OK(keeper.Admit("alice", "submitter", 2, 0).status());
  auto over = keeper.Admit("alice", "submitter", 3, 0);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("has 3 jobs pending or running and this submission "
                                         "adds 3, over its limit of 5"),
            std::string::npos)
      << over.status().message();
  EXPECT_TRUE(RetryAfterMs(over.status()).has_value());
  // More than the limit at once can never fit: no retry is offered.
  auto never = keeper.Admit("carol", "submitter", 6, 0);
  EXPECT_EQ(never.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfterMs(never.status()), std::nullopt);
  // Jobs that ended no longer count.
  auto job = store_->AcquireJob("w1", 10, 1000, nullptr);
  ASSERT_OK(job.status());
  ASSERT_OK(store_->CompleteAttempt({.job_id = (*job)->id, .attempt = 1, .worker_id = "w1"}, 20)
                .status());
  EXPECT_OK(keeper.Admit("alice", "submitter", 3, 0).status());
}

TEST_F(QuotaTest, StoredBytesCountRecipesLogsWheelsAndSourcesAndUploadsInProgress) {
  QuotaKeeper keeper = Keeper({.stored_bytes = 10000});
  Build("alice", 1, 1000);
  auto job = store_->AcquireJob("w1", 10, 1000, nullptr);
  ASSERT_OK(job.status());
  ASSERT_OK(store_->AppendLogLines((*job)->id, 1, {{1, 1, std::string(999, 'l'), 1}}).status());
  ASSERT_OK(store_
                ->InsertArtifact({.job_id = (*job)->id,
                                  .attempt = 1,
                                  .filename = "a.whl",
                                  .sha256 = "ab",
                                  .size = 3000})
                .status());
  ASSERT_OK(store_->RecordSourceArchive(
      {.sha256 = std::string(64, 'c'), .size = 2000, .uploaded_by = "alice"}));
  auto usage = store_->GetPrincipalUsage("alice");
  ASSERT_OK(usage.status());
  EXPECT_EQ(usage->stored_bytes, 1000 + 1000 + 3000 + 2000);
  EXPECT_EQ(usage->queued_jobs, 1);
  EXPECT_OK(keeper.Admit("alice", "submitter", 0, 3000).status());
  auto upload = keeper.ReserveBytes("alice", "submitter", 2500);
  ASSERT_OK(upload.status());
  // While the upload goes on its bytes count: the next 1000 do not fit.
  Status full = keeper.Admit("alice", "submitter", 0, 1000).status();
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("over its limit of 10000 bytes"), std::string::npos)
      << full.message();
  upload.value() = Reservation();  // the upload ended (recorded, or given up)
  EXPECT_OK(keeper.Admit("alice", "submitter", 0, 1000).status());
  EXPECT_OK(keeper.Admit("bob", "submitter", 0, 10000).status());
}

TEST_F(QuotaTest, LimitsParseFromFlagsAndReadBack) {
  Limits l;
  ASSERT_OK(ParseLimits("submissions=3,queued-jobs=unlimited", &l));
  EXPECT_EQ(l.submissions, 3);
  EXPECT_EQ(l.queued_jobs, kUnlimited);
  EXPECT_EQ(l.stored_bytes, kUnlimited);
  EXPECT_EQ(ParseLimits("submisions=3", &l).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLimits("queued-jobs=-4", &l).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLimits("stored-bytes=12x", &l).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RetryAfterMs(Exhausted("over", 1)), std::optional<int64_t>(1000));
  EXPECT_EQ(RetryAfterMs(Exhausted("over", 2001)), std::optional<int64_t>(3000));
  EXPECT_EQ(RetryAfterMs(Status::Internal("retry after 3 s")), std::nullopt);
}

TEST_F(QuotaTest, TheRoleOfASchedulesCreatorIsItsStrongestLiveToken) {
  QuotaKeeper keeper = Keeper({});
  ASSERT_OK(
      store_->InsertToken({.hash = std::string(64, 'a'), .name = "ops", .role = "submitter"}));
  ASSERT_OK(store_->InsertToken({.hash = std::string(64, 'b'), .name = "ops", .role = "admin"}));
  ASSERT_OK(store_->RevokeToken("bbbbbbbb", 5).status());
  EXPECT_EQ(keeper.RoleOf("ops").value(), "submitter");
  ASSERT_OK(store_->InsertToken({.hash = std::string(64, 'c'), .name = "ops", .role = "admin"}));
  EXPECT_EQ(keeper.RoleOf("ops").value(), "admin");
  EXPECT_EQ(keeper.RoleOf("nobody").value(), "submitter");
}

}  // namespace
}  // namespace farm::quota
