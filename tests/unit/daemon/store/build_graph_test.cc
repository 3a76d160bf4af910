// Build graphs in the store: a job held on the jobs it requires is never leased, takes a
// key from the wheels it consumes, fails naming a failed requirement, and waits again when
// that requirement is retried.
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "daemon/builds/build_key.h"
#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class BuildGraphTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    BuildRow dep{.recipe_name = "dep", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<JobRow> rows(1);
    rows[0].cell = "cell";
    rows[0].build_key = "dep-key";
    ASSERT_OK(store_->CreateBuild(&dep, &rows));
    dep_job_ = rows[0].id;
  }

  // A build of "app" whose one job requires the dependency's job.
  int64_t SubmitDependent(int64_t now_ms, bool force = false) {
    BuildRow app{.recipe_name = "app", .recipe = "r", .submitted_by = "t", .created_ms = now_ms};
    std::vector<JobRow> rows(1);
    rows[0].cell = "cell";
    rows[0].key_base = "app-base";
    rows[0].created_ms = now_ms;
    BuildLinks links{.merge_in_flight = true, .force = force, .inputs_key = builds::KeyWithInputs};
    links.requirements.push_back({.index = 0,
                                  .required_job_id = dep_job_,
                                  .recipe_name = "dep",
                                  .for_build = true,
                                  .for_validation = true});
    EXPECT_OK(store_->CreateBuildLinked(&app, &rows, &links));
    return rows[0].id;
  }

  // The dependency's job ends with `wheel_sha` (succeeded) or fails when it is empty.
  void EndDependency(const std::string& wheel_sha, int64_t now_ms) {
    auto leased = store_->AcquireJob("w", now_ms, 1000, nullptr);
    ASSERT_OK(leased.status());
    ASSERT_TRUE(leased->has_value());
    ASSERT_EQ((*leased)->id, dep_job_);
    CompletionReport r{.job_id = dep_job_, .attempt = (*leased)->attempt, .worker_id = "w"};
    if (wheel_sha.empty()) {
      r.cause = kCauseBuildFailed;
      r.exit_code = 3;
      r.detail = "build command exited with code 3";
    } else {
      ASSERT_OK(store_
                    ->InsertArtifact({.job_id = dep_job_,
                                      .attempt = (*leased)->attempt,
                                      .filename = "dep.whl",
                                      .sha256 = wheel_sha,
                                      .size = 1})
                    .status());
    }
    ASSERT_OK(store_->CompleteAttempt(r, now_ms).status());
  }

  JobRow Job(int64_t id) {
    auto j = store_->GetJob(id);
    EXPECT_OK(j.status());
    return j.ok() ? *j : JobRow{};
  }

  int64_t dep_job_ = 0;
};

TEST_F(BuildGraphTest, HeldJobIsNeverLeasedAndTakesTheKeyOfTheWheelItConsumes) {
  int64_t queue = store_->QueueGeneration();
  int64_t app = SubmitDependent(5);
  EXPECT_EQ(store_->QueueGeneration(), queue) << "a held job woke the idle workers";
  EXPECT_EQ(Job(app).held, kHeld);
  EXPECT_TRUE(Job(app).build_key.empty());
  EXPECT_NE(Job(app).error.find("waiting for job"), std::string::npos);
  EndDependency(std::string(64, 'a'), 10);
  // Only the dependency was leasable; now the dependent is released.
  queue = store_->QueueGeneration();
  auto settled = store_->ResolveHeldJobs(20, builds::KeyWithInputs);
  ASSERT_OK(settled.status());
  EXPECT_EQ(*settled, std::vector<int64_t>{app});
  EXPECT_GT(store_->QueueGeneration(), queue) << "the released job woke nobody";
  JobRow released = Job(app);
  EXPECT_EQ(released.held, kNotHeld);
  EXPECT_EQ(released.build_key, builds::KeyWithInputs("app-base", {std::string(64, 'a')}));
  auto inputs = store_->ListJobInputs(app);
  ASSERT_OK(inputs.status());
  ASSERT_EQ(inputs->size(), 1u);
  EXPECT_EQ(inputs->at(0).artifact.sha256, std::string(64, 'a'));
  auto consumers = store_->ListConsumers(dep_job_);
  ASSERT_OK(consumers.status());
  ASSERT_EQ(consumers->size(), 1u);
  EXPECT_EQ(consumers->at(0).job_id, app);
  auto leased = store_->AcquireJob("w", 30, 1000, nullptr);
  ASSERT_OK(leased.status());
  ASSERT_TRUE(leased->has_value());
  EXPECT_EQ((*leased)->id, app);
}

TEST_F(BuildGraphTest, HeldJobIsNeitherListedLeasableNorLeasedInABatch) {
  int64_t app = SubmitDependent(5);
  const int64_t later = std::numeric_limits<int64_t>::max() - 1;
  auto ids = store_->ListLeasableJobIds(later, 100);
  ASSERT_OK(ids.status());
  EXPECT_EQ(*ids, std::vector<int64_t>{dep_job_});
  auto leased = store_->LeaseJobs({{app, "w"}, {dep_job_, "w"}}, later, 1000);
  ASSERT_OK(leased.status());
  ASSERT_EQ(leased->size(), 2u);
  EXPECT_FALSE(leased->at(0).has_value()) << "a held job was leased";
  EXPECT_TRUE(leased->at(1).has_value());
  EXPECT_EQ(Job(app).state, kJobPending);
}

TEST_F(BuildGraphTest, JobsInGraphNamesRequiringAndRequiredJobsOnly) {
  int64_t app = SubmitDependent(5);
  BuildRow loner{.recipe_name = "loner", .recipe = "r", .submitted_by = "t", .created_ms = 1};
  std::vector<JobRow> rows(1);
  rows[0].cell = "cell";
  ASSERT_OK(store_->CreateBuild(&loner, &rows));
  auto linked = store_->JobsInGraph({rows[0].id, app, dep_job_, 987654321});
  ASSERT_OK(linked.status());
  EXPECT_EQ(*linked, (std::set<int64_t>{dep_job_, app}));
  auto none = store_->JobsInGraph({});
  ASSERT_OK(none.status());
  EXPECT_TRUE(none->empty());
}

TEST_F(BuildGraphTest, AnUnchangedWheelAnswersTheDependentFromTheStore) {
  int64_t first = SubmitDependent(5);
  EndDependency(std::string(64, 'b'), 10);
  ASSERT_OK(store_->ResolveHeldJobs(20, builds::KeyWithInputs).status());
  auto leased = store_->AcquireJob("w", 30, 1000, nullptr);
  ASSERT_OK(leased.status());
  ASSERT_TRUE(leased->has_value());
  ASSERT_OK(store_
                ->InsertArtifact({.job_id = first,
                                  .attempt = 1,
                                  .filename = "app.whl",
                                  .sha256 = std::string(64, 'c'),
                                  .size = 1})
                .status());
  ASSERT_OK(
      store_->CompleteAttempt({.job_id = first, .attempt = 1, .worker_id = "w"}, 40).status());
  // The dependency has succeeded: a new dependent settles in the submitting transaction.
  int64_t second = SubmitDependent(50);
  EXPECT_EQ(Job(second).state, kJobSucceeded);
  EXPECT_EQ(Job(second).reused_from, first);
  // Forced, the same graph builds the dependent again.
  int64_t forced = SubmitDependent(60, /*force=*/true);
  EXPECT_EQ(Job(forced).state, kJobPending);
  EXPECT_EQ(Job(forced).reused_from, 0);
  EXPECT_EQ(Job(forced).not_before_ms, 0);
}

TEST_F(BuildGraphTest, FailedRequirementFailsTheDependentAndItsRetryHoldsItAgain) {
  int64_t app = SubmitDependent(5);
  EndDependency("", 10);
  ASSERT_OK(store_->ResolveHeldJobs(20, builds::KeyWithInputs).status());
  JobRow failed = Job(app);
  EXPECT_EQ(failed.state, kJobFailed);
  EXPECT_NE(
      failed.error.find("required job " + std::to_string(dep_job_) + " (dep, build 1) failed"),
      std::string::npos)
      << failed.error;
  auto build = store_->GetBuild(failed.build_id);
  ASSERT_OK(build.status());
  EXPECT_EQ(build->state, kBuildFailed);

  ASSERT_OK(store_->RetryJob(dep_job_, 30));
  JobRow waiting = Job(app);
  EXPECT_EQ(waiting.state, kJobPending);
  EXPECT_EQ(waiting.held, kHeld);
  EndDependency(std::string(64, 'd'), 40);
  ASSERT_OK(store_->ResolveHeldJobs(50, builds::KeyWithInputs).status());
  EXPECT_EQ(Job(app).held, kNotHeld);
  EXPECT_EQ(Job(app).state, kJobPending);
}

}  // namespace
}  // namespace farm::store
