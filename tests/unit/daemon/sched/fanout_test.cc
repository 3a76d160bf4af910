// The stable-ABI fan-out on farmd's side, over a real SQLite store: the validation jobs a
// build's success queues (one per other cell, in that cell, over the counted attempt's
// wheels), how a fanned-out validation's report decides its job, and the torches the wheel
// is proven with as its validations end.
#include "daemon/sched/fanout.h"

#include <gtest/gtest.h>

#include "daemon/model/convert.h"
#include "daemon/model/torch_proofs.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::sched {
namespace {

farm::v1::MatrixCell Cell(const std::string& torch) {
  farm::v1::MatrixCell c;
  c.set_python("3.11");
  c.set_torch(torch);
  c.set_cuda("12.8");
  c.set_arch_list("9.0");
  c.set_platform("linux_x86_64");
  return c;
}

class FanoutTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    farm::v1::JobNeeds needs;
    needs.set_provisioned(true);
    for (const char* t : {"2.9", "2.10", "2.11"}) *needs.add_validate_in() = Cell(t);
    store::BuildRow b{.recipe_name = "abi", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<store::JobRow> rows(1);
    rows[0].cell = Cell("2.11").SerializeAsString();
    rows[0].needs = needs.SerializeAsString();
    rows[0].max_attempts = 3;
    ASSERT_OK(store_->CreateBuild(&b, &rows));
    auto leased = store_->AcquireJob("builder", 10, 1000, nullptr);
    ASSERT_OK(leased.status());
    ASSERT_TRUE(leased->has_value());
    job_ = **leased;
    farm::v1::ArchManifest manifest;
    manifest.add_images()->set_arch("sm_90");
    manifest.add_runs_on("9.0");
    farm::v1::ValidationReport passed;
    passed.set_state(farm::v1::VALIDATION_PASSED);
    ASSERT_OK(store_
                  ->InsertArtifact({.job_id = job_.id,
                                    .attempt = 1,
                                    .filename = "abi.whl",
                                    .sha256 = std::string(64, 'c'),
                                    .size = 3,
                                    .manifest = manifest.SerializeAsString()})
                  .status());
    own_report_ = passed.SerializeAsString();
  }

  // The build's attempt 1 succeeds, queueing what FanoutValidations says.
  std::vector<store::JobRow> Succeed() {
    auto rows = FanoutValidations(*store_, job_, 1, 50, job_.max_attempts);
    EXPECT_OK(rows.status());
    auto done = store_->CompleteAttempt({.job_id = job_.id,
                                         .attempt = 1,
                                         .worker_id = "builder",
                                         .validation = own_report_,
                                         .validation_state = farm::v1::VALIDATION_PASSED,
                                         .on_success = *rows},
                                        60);
    EXPECT_OK(done.status());
    job_ = *store_->GetJob(job_.id);
    return *store_->ListValidationJobs(job_.id, 1);
  }

  farm::v1::Job Proofs() {
    farm::v1::Job out;
    EXPECT_OK(model::AddTorchProofs(*store_, *store_->GetJob(job_.id), &out));
    return out;
  }

  store::JobRow job_;
  std::string own_report_;
};

TEST_F(FanoutTest, OneValidationPerOtherCellNeedingItsGpuAndAProvisioningWorker) {
  auto rows = FanoutValidations(*store_, job_, 1, 50, 3);
  ASSERT_OK(rows.status());
  ASSERT_EQ(rows->size(), 2u);  // 2.9 and 2.10: the build validated 2.11 itself
  for (size_t i = 0; i < rows->size(); ++i) {
    const store::JobRow& r = rows->at(i);
    EXPECT_EQ(r.kind, store::kJobValidate);
    EXPECT_EQ(r.target_job_id, job_.id);
    EXPECT_EQ(r.target_attempt, 1);
    EXPECT_EQ(r.max_attempts, 3);
    EXPECT_EQ(model::ParseBlob<farm::v1::MatrixCell>(r.cell).torch(), i == 0 ? "2.9" : "2.10");
    auto needs = model::ParseBlob<farm::v1::JobNeeds>(r.needs);
    EXPECT_TRUE(needs.provisioned());
    ASSERT_EQ(needs.gpu_ccs_size(), 1);
    EXPECT_EQ(needs.gpu_ccs(0), "9.0");
    EXPECT_TRUE(IsFanoutValidation(r, job_));
  }
  // A job without validate_in (every build that is not stable-ABI) queues none.
  store::JobRow plain = job_;
  plain.needs.clear();
  auto none = FanoutValidations(*store_, plain, 1, 50, 3);
  ASSERT_OK(none.status());
  EXPECT_TRUE(none->empty());
}

TEST_F(FanoutTest, OnlyAPassedReportProvesATorch) {
  farm::v1::ValidationReport report;
  report.set_state(farm::v1::VALIDATION_PASSED);
  int cause = store::kCauseCompleted;
  std::string detail;
  FanoutOutcome(report, &cause, &detail);
  EXPECT_EQ(cause, store::kCauseCompleted);
  report.set_state(farm::v1::VALIDATION_NOT_RUN);
  report.set_message("the recipe asks for no validation");
  FanoutOutcome(report, &cause, &detail);
  EXPECT_EQ(cause, store::kCauseValidationFailed);
  EXPECT_EQ(detail,
            "validation did not prove this torch (VALIDATION_NOT_RUN): the recipe asks for no "
            "validation");
  // A lost or failed attempt keeps its own cause.
  cause = store::kCauseLostWorker;
  detail = "lost";
  FanoutOutcome(report, &cause, &detail);
  EXPECT_EQ(cause, store::kCauseLostWorker);
  EXPECT_EQ(detail, "lost");
}

TEST_F(FanoutTest, TheProvenListFollowsTheValidations) {
  farm::v1::Job before = Proofs();
  ASSERT_EQ(before.torch_proofs_size(), 3);
  for (const auto& p : before.torch_proofs()) EXPECT_EQ(p.state(), farm::v1::PROOF_PENDING);
  EXPECT_EQ(before.proven_torch_size(), 0);

  std::vector<store::JobRow> queued = Succeed();
  ASSERT_EQ(queued.size(), 2u);
  farm::v1::Job built = Proofs();
  ASSERT_EQ(built.proven_torch_size(), 1);
  EXPECT_EQ(built.proven_torch(0), "2.11");  // the build's own validation
  EXPECT_EQ(built.torch_proofs(0).state(), farm::v1::PROOF_PENDING);
  EXPECT_EQ(built.torch_proofs(0).job_id(), queued[0].id);

  // 2.9 passes, 2.10 fails: 2.10 is left out and its failure named.
  for (int i = 0; i < 2; ++i) {
    auto leased = store_->AcquireJob("gpu", 100, 1000, nullptr);
    ASSERT_OK(leased.status());
    ASSERT_TRUE(leased->has_value());
  }
  ASSERT_OK(store_->CompleteAttempt({.job_id = queued[0].id, .attempt = 1, .worker_id = "gpu"}, 110)
                .status());
  ASSERT_OK(store_
                ->CompleteAttempt({.job_id = queued[1].id,
                                   .attempt = 1,
                                   .worker_id = "gpu",
                                   .cause = store::kCauseValidationFailed,
                                   .exit_code = 1,
                                   .detail = "validation failed: undefined symbol"},
                                  120)
                .status());
  farm::v1::Job ended = Proofs();
  ASSERT_EQ(ended.proven_torch_size(), 2);
  EXPECT_EQ(ended.proven_torch(0), "2.9");
  EXPECT_EQ(ended.proven_torch(1), "2.11");
  EXPECT_EQ(ended.torch_proofs(1).cell().torch(), "2.10");
  EXPECT_EQ(ended.torch_proofs(1).state(), farm::v1::PROOF_FAILED);
  EXPECT_EQ(ended.torch_proofs(1).detail(), "validation failed: undefined symbol");
  EXPECT_EQ(ended.torch_proofs(1).job_id(), queued[1].id);
}

TEST_F(FanoutTest, AFailedBuildProvesNothing) {
  ASSERT_OK(store_
                ->CompleteAttempt({.job_id = job_.id,
                                   .attempt = 1,
                                   .worker_id = "builder",
                                   .cause = store::kCauseBuildFailed,
                                   .exit_code = 1},
                                  60)
                .status());
  farm::v1::Job proofs = Proofs();
  ASSERT_EQ(proofs.torch_proofs_size(), 3);
  for (const auto& p : proofs.torch_proofs()) EXPECT_EQ(p.state(), farm::v1::PROOF_NOT_RUN);
  EXPECT_EQ(proofs.proven_torch_size(), 0);
  EXPECT_TRUE(store_->ListValidationJobs(job_.id, 1)->empty());
}

}  // namespace
}  // namespace farm::sched
