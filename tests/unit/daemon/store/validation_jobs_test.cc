// Validation jobs in the store: queued once per target attempt, leased like any job, and
// their report stored with the wheels they validate (and copies of the same bytes).
#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class ValidationJobsTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
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

// A proof with a torch released after the build (daemon/builds/new_torch.h): its key in
// the store queues it once, whatever asks again, and the job keeps its report to itself.
TEST_F(ValidationJobsTest, ANewTorchProofIsQueuedOncePerKeyAndItsFailureListed) {
  JobRow row = ValidationJob();
  row.cell = "cell-2.12";
  auto first = store_->QueueNewTorchProof(row, "3.11/2.12/12.8/", "2.12.0");
  ASSERT_OK(first.status());
  EXPECT_TRUE(first->queued);
  // Asked again (a farmd that saw the release again after a kill): the first job answers.
  auto again = store_->QueueNewTorchProof(row, "3.11/2.12/12.8/", "2.12.0");
  ASSERT_OK(again.status());
  EXPECT_FALSE(again->queued);
  EXPECT_EQ(again->job.id, first->job.id);
  auto other = store_->QueueNewTorchProof(row, "3.12/2.12/12.8/", "2.12.0");
  ASSERT_OK(other.status());
  EXPECT_TRUE(other->queued);
  EXPECT_NE(other->job.id, first->job.id);
  ASSERT_EQ(store_->ListValidationJobs(job_id_, 1)->size(), 2u);
  EXPECT_TRUE(store_->ListRefusedTorches(10)->empty());

  auto leased = store_->AcquireJob("gpu-1", 40, 1000, nullptr);
  ASSERT_OK(leased.status());
  ASSERT_TRUE(leased->has_value());
  ASSERT_OK(store_
                ->CompleteAttempt({.job_id = (*leased)->id,
                                   .attempt = 1,
                                   .worker_id = "gpu-1",
                                   .cause = kCauseValidationFailed,
                                   .detail = "undefined symbol",
                                   .validation = "failed-report",
                                   .validation_state = kValidationFailed},
                                  50)
                .status());
  auto refused = store_->ListRefusedTorches(10);
  ASSERT_OK(refused.status());
  ASSERT_EQ(refused->size(), 1u);
  EXPECT_EQ(refused->at(0).sha256, std::string(64, 'a'));
  EXPECT_EQ(refused->at(0).torch, "2.12.0");
  EXPECT_EQ(refused->at(0).job_id, (*leased)->id);
  EXPECT_NE(refused->at(0).reason.find("undefined symbol"), std::string::npos);
  // The wheels keep the build's own report: this proof was about another torch.
  EXPECT_EQ(store_->GetArtifact(artifact_id_)->validation, "waiting");
  JobRow build = ValidationJob();
  build.kind = kJobBuild;
  EXPECT_EQ(store_->QueueNewTorchProof(build, "k", "2.12.0").status().code(),
            StatusCode::kInvalidArgument);
}

// A stable-ABI build (daemon/sched/fanout.h): its validations in other cells are queued in
// the transaction that records its success, once each, and keep their reports to
// themselves.
class FanoutStoreTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    BuildRow b{.recipe_name = "abi", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<JobRow> rows(1);
    rows[0].cell = "cell-2.10";
    rows[0].max_attempts = 2;
    ASSERT_OK(store_->CreateBuild(&b, &rows));
    build_id_ = b.id;
    job_id_ = rows[0].id;
  }

  void Lease(const std::string& worker) {
    auto job = store_->AcquireJob(worker, 10, 1000, nullptr);
    ASSERT_OK(job.status());
    ASSERT_TRUE(job->has_value());
  }

  JobRow In(const std::string& cell) {
    return {.build_id = build_id_,
            .cell = cell,
            .max_attempts = 2,
            .created_ms = 30,
            .kind = kJobValidate,
            .target_job_id = job_id_,
            .target_attempt = 1};
  }

  CompletionReport Succeeded(int attempt) {
    return {.job_id = job_id_,
            .attempt = attempt,
            .worker_id = "builder",
            .max_attempts = 2,
            .validation = "own-report",
            .validation_state = kValidationPassed,
            .on_success = {In("cell-2.9"), In("cell-2.11"), In("cell-2.9")}};
  }

  int64_t build_id_ = 0, job_id_ = 0;
};

TEST_F(FanoutStoreTest, TheSuccessQueuesOneValidationPerCellOnce) {
  Lease("builder");
  ASSERT_OK(store_
                ->InsertArtifact({.job_id = job_id_,
                                  .attempt = 1,
                                  .filename = "a.whl",
                                  .sha256 = std::string(64, 'b'),
                                  .size = 3})
                .status());
  auto done = store_->CompleteAttempt(Succeeded(1), 20);
  ASSERT_OK(done.status());
  EXPECT_EQ(*done, kJobSucceeded);
  auto listed = store_->ListValidationJobs(job_id_, 1);
  ASSERT_OK(listed.status());
  ASSERT_EQ(listed->size(), 2u);  // the cell named twice is queued once
  EXPECT_EQ(listed->at(0).cell, "cell-2.9");
  EXPECT_EQ(listed->at(1).cell, "cell-2.11");
  EXPECT_EQ(listed->at(0).state, kJobPending);
  // The same report again (a worker retrying after a lost reply) queues nothing more.
  auto again = store_->CompleteAttempt(Succeeded(1), 21);
  ASSERT_OK(again.status());
  EXPECT_EQ(store_->ListValidationJobs(job_id_, 1)->size(), 2u);
  // The build is done; its validations run on.
  EXPECT_EQ(store_->GetBuild(build_id_)->state, kBuildSucceeded);
  // A manual validation in the build's own cell is not held back by them.
  auto own = store_->QueueValidationJob(In("cell-2.10"));
  ASSERT_OK(own.status());
  EXPECT_EQ(store_->ListValidationJobs(job_id_, 1)->size(), 3u);
  // One in a fanned-out cell that is still pending answers for itself.
  auto pending = store_->QueueValidationJob(In("cell-2.9"));
  ASSERT_OK(pending.status());
  EXPECT_EQ(pending->id, listed->at(0).id);

  // A fanned-out validation's report stays with its job: the wheels keep the build's.
  Lease("gpu");
  auto leased = store_->ListValidationJobs(job_id_, 1);
  ASSERT_OK(leased.status());
  const JobRow& running = leased->at(0);
  ASSERT_EQ(running.state, kJobRunning);
  auto failed = store_->CompleteAttempt({.job_id = running.id,
                                         .attempt = 1,
                                         .worker_id = "gpu",
                                         .cause = kCauseValidationFailed,
                                         .exit_code = 1,
                                         .detail = "validation failed: torch 2.9 refused",
                                         .validation = "other-report",
                                         .validation_state = kValidationFailed},
                                        40);
  ASSERT_OK(failed.status());
  EXPECT_EQ(*failed, kJobFailed);
  auto artifacts = store_->ListArtifacts(job_id_);
  ASSERT_OK(artifacts.status());
  EXPECT_EQ(artifacts->at(0).validation, "own-report");
  EXPECT_EQ(artifacts->at(0).validation_state, kValidationPassed);
  EXPECT_EQ(store_->GetJob(running.id)->error, "validation failed: torch 2.9 refused");
}

TEST_F(FanoutStoreTest, AnAttemptThatDoesNotSucceedQueuesNothing) {
  Lease("builder");
  CompletionReport lost = Succeeded(1);
  lost.cause = kCauseInfrastructure;
  auto requeued = store_->CompleteAttempt(lost, 20);
  ASSERT_OK(requeued.status());
  EXPECT_EQ(*requeued, kJobPending);
  CompletionReport failed = Succeeded(2);
  failed.cause = kCauseBuildFailed;
  failed.exit_code = 1;
  Lease("builder");
  auto ended = store_->CompleteAttempt(failed, 30);
  ASSERT_OK(ended.status());
  EXPECT_EQ(*ended, kJobFailed);
  EXPECT_TRUE(store_->ListValidationJobs(job_id_, 1)->empty());
  EXPECT_TRUE(store_->ListValidationJobs(job_id_, 2)->empty());
}

}  // namespace
}  // namespace farm::store
