// Validation jobs in the store: queued once per target attempt, leased like any job, and
// their report stored with the wheels they validate (and copies of the same bytes).
#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class ValidationJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = under_test_.Open();
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
    BuildRow b{.recipe_name = "attn-example", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<JobRow> rows(1);
    rows[0].cell = "cell";
    ASSERT_OK(store_->CreateBuild(&b, &rows));
    build_id_ = b.id;
    auto job = store_->AcquireJob("builder", 10, 1000, nullptr);
    ASSERT_OK(job.status());
    ASSERT_TRUE(job->has_value());
    job_id_ = (*job)->id;
    auto a = store_->InsertArtifact({.job_id = job_id_,
                                     .attempt = 1,
                                     .filename = "a.whl",
                                     .sha256 = std::string(64, 'a'),
                                     .size = 3});
    ASSERT_OK(a.status());
    artifact_id_ = a->id;
    auto done = store_->CompleteAttempt({.job_id = job_id_,
                                         .attempt = 1,
                                         .worker_id = "builder",
                                         .validation = "waiting",
                                         .validation_state = kValidationPendingHardware},
                                        20);
    ASSERT_OK(done.status());
    ASSERT_EQ(*done, kJobSucceeded);
  }

  JobRow ValidationJob() {
    return {.build_id = build_id_,
            .cell = "cell",
            .max_attempts = 3,
            .created_ms = 30,
            .kind = kJobValidate,
            .target_job_id = job_id_,
            .target_attempt = 1};
  }

  testing::ScopedTempDir dir_;
  StoreUnderTest under_test_{dir_.path()};
  std::unique_ptr<Store> store_;
  int64_t build_id_ = 0, job_id_ = 0, artifact_id_ = 0;
};

TEST_F(ValidationJobsTest, WaitingWheelsAreFoundByTheirState) {
  auto waiting = store_->ListArtifactsInValidationState(kValidationPendingHardware, 0, 10);
  ASSERT_OK(waiting.status());
  ASSERT_EQ(waiting->size(), 1u);
  EXPECT_EQ(waiting->at(0).id, artifact_id_);
  auto after = store_->ListArtifactsInValidationState(kValidationPendingHardware, artifact_id_, 10);
  ASSERT_OK(after.status());
  EXPECT_TRUE(after->empty());
}

TEST_F(ValidationJobsTest, OneOpenJobPerTargetAndItsReportGoesToTheWheels) {
  auto first = store_->QueueValidationJob(ValidationJob());
  ASSERT_OK(first.status());
  auto second = store_->QueueValidationJob(ValidationJob());
  ASSERT_OK(second.status());
  EXPECT_EQ(first->id, second->id);  // the pending one answers

  auto leased = store_->AcquireJob("gpu-1", 40, 1000, nullptr);
  ASSERT_OK(leased.status());
  ASSERT_TRUE(leased->has_value());
  EXPECT_EQ((*leased)->id, first->id);
  EXPECT_EQ((*leased)->kind, kJobValidate);
  auto done = store_->CompleteAttempt({.job_id = first->id,
                                       .attempt = 1,
                                       .worker_id = "gpu-1",
                                       .validation = "passed-report",
                                       .validation_state = kValidationPassed},
                                      50);
  ASSERT_OK(done.status());
  EXPECT_EQ(*done, kJobSucceeded);

  auto artifact = store_->GetArtifact(artifact_id_);
  ASSERT_OK(artifact.status());
  EXPECT_EQ(artifact->validation, "passed-report");
  EXPECT_EQ(artifact->validation_state, kValidationPassed);
  EXPECT_EQ(store_->GetBuild(build_id_)->state, kBuildSucceeded);
  auto listed = store_->ListValidationJobs(job_id_, 1);
  ASSERT_OK(listed.status());
  ASSERT_EQ(listed->size(), 1u);
  // Once it ended, asking again queues a new one.
  auto third = store_->QueueValidationJob(ValidationJob());
  ASSERT_OK(third.status());
  EXPECT_NE(third->id, first->id);
}

TEST_F(ValidationJobsTest, AJobThatIsNotAValidationIsRefused) {
  JobRow row = ValidationJob();
  row.kind = kJobBuild;
  EXPECT_EQ(store_->QueueValidationJob(row).status().code(), StatusCode::kInvalidArgument);
  row = ValidationJob();
  row.target_job_id = 0;
  EXPECT_EQ(store_->QueueValidationJob(row).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::store
