// The statements farmd signs from its store: a wheel's build (recipe, source, patches,
// cell, worker, consumed inputs, log digest), its validations, relabelled copies, and
// re-signing after a revocation. A real SQLite store and key ring in a temporary directory.
#include "daemon/attest/attestor.h"

#include <gtest/gtest.h>

#include "common/provenance/verify.h"
#include "common/sha256.h"
#include "tests/support/one_job_build.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::attest {
namespace {

constexpr char kYaml[] = "name: attn-example\nversion: \"0.1.0\"\n";

class AttestorTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    keys_ = provenance::KeyRing::Open(dir_.path() + "/provenance", clock_).value();
    attestor_ = std::make_unique<Attestor>(store_.get(), keys_.get(), &clock_);
    farm::v1::Capabilities caps;
    caps.set_hostname("box1");
    caps.set_driver_version("580.65");
    caps.set_driver_cuda_version("13.0");
    auto* gpu = caps.add_gpus();
    gpu->set_name("NVIDIA H100");
    gpu->set_cc_major(9);
    auto* toolkit = caps.add_toolkits();
    toolkit->set_version("13.0");
    toolkit->set_path("/usr/local/cuda");
    ASSERT_OK(store_->UpsertWorker({.id = "w-1",
                                    .name = "gpu-box-1",
                                    .capabilities = caps.SerializeAsString(),
                                    .state = store::WorkerState::kIdle}));
    farm::v1::Recipe recipe;
    recipe.set_name("attn-example");
    recipe.set_version("0.1.0");
    recipe.set_yaml(kYaml);
    recipe.mutable_source()->mutable_archive()->set_sha256(std::string(64, 'c'));
    auto* patch = recipe.add_patches();
    patch->set_name("fix.patch");
    patch->set_content("--- a\n+++ b\n");
    farm::v1::MatrixCell cell;
    cell.set_python("3.11");
    cell.set_cuda("13.0");
    cell.set_arch_list("9.0");
    cell.set_platform("linux_x86_64");
    auto job = farm::testing::LeaseOneJobBuild(*store_, recipe, cell, "w-1", clock_.NowUnixMs());
    ASSERT_OK(job.status());
    job_ = *job;
    ASSERT_OK(
        store_->AppendLogLines(job_.id, 1, {{1, 1, "compiling", 1}, {2, 1, "done", 2}}).status());
    artifact_ = store_
                    ->InsertArtifact({.job_id = job_.id,
                                      .attempt = 1,
                                      .filename = kWheel,
                                      .sha256 = Sha256Hex("wheel"),
                                      .size = 5})
                    .value();
  }

  provenance::WheelVerification Verify(const provenance::Subject& wheel,
                                       const std::string& arch = "") {
    auto envelopes = attestor_->Envelopes(wheel.sha256);
    EXPECT_TRUE(envelopes.ok()) << envelopes.status().ToString();
    return provenance::VerifyWheel(
        wheel, envelopes.ok() ? *envelopes : std::vector<provenance::Envelope>{}, keys_->Keys(),
        {.require_validated_arch = arch});
  }

  static constexpr char kWheel[] = "attn_example-0.1.0+cu130-cp311-cp311-linux_x86_64.whl";
  std::unique_ptr<provenance::KeyRing> keys_;
  std::unique_ptr<Attestor> attestor_;
  store::JobRow job_;
  store::ArtifactRow artifact_;
};

TEST_F(AttestorTest, BuildStatementNamesWhatMadeTheWheel) {
  ASSERT_OK(attestor_->AttestBuild(artifact_));
  ASSERT_OK(attestor_->AttestBuild(artifact_));  // a repeated upload signs nothing twice
  ASSERT_EQ(attestor_->Envelopes(artifact_.sha256)->size(), 1u);
  auto v = Verify({kWheel, artifact_.sha256});
  ASSERT_TRUE(v.ok) << v.problems[0];
  const provenance::BuildSummary& b = *v.build;
  EXPECT_EQ(b.builder_id, "urn:gpu-wheel-farm:farm:" + keys_->farm_id());
  EXPECT_EQ(b.worker, "gpu-box-1 (host box1)");
  EXPECT_EQ(b.worker_gpus, "NVIDIA H100 (9.0)");
  EXPECT_EQ(b.driver, "580.65 (CUDA 13.0)");
  EXPECT_EQ(b.toolkits, "13.0 at /usr/local/cuda");
  EXPECT_EQ(b.recipe, "attn-example 0.1.0 (recipe sha256 " + Sha256Hex(kYaml) + ")");
  EXPECT_EQ(b.source, "archive sha256 " + std::string(64, 'c'));
  EXPECT_EQ(b.cell, "python 3.11, cuda 13.0, arch 9.0, linux_x86_64");
  EXPECT_EQ(b.patches, 1);
  EXPECT_EQ(b.log_sha256, Sha256Hex("compiling\ndone\n"));
  EXPECT_FALSE(b.started.empty());
  // Another wheel's bytes are not covered.
  EXPECT_FALSE(Verify({kWheel, Sha256Hex("other")}).ok);
}

TEST_F(AttestorTest, PassedAndFailedValidationsAreSignedPendingOnesAreNot) {
  ASSERT_OK(attestor_->AttestBuild(artifact_));
  farm::v1::ValidationReport pending;
  pending.set_state(farm::v1::VALIDATION_PENDING_HARDWARE);
  ASSERT_OK(attestor_->AttestValidation(job_, 1, pending, "w-1"));
  EXPECT_EQ(attestor_->Envelopes(artifact_.sha256)->size(), 1u);

  farm::v1::ValidationReport passed;
  passed.set_state(farm::v1::VALIDATION_PASSED);
  passed.set_gpu_name("NVIDIA H100");
  passed.set_compute_capability("9.0");
  auto* c = passed.add_cases();
  c->set_name("fp16");
  c->set_passed(true);
  c->set_tops(700);  // a schema v1 report
  ASSERT_OK(attestor_->AttestValidation(job_, 1, passed, "w-1"));
  auto v = Verify({kWheel, artifact_.sha256}, "sm_90");
  ASSERT_TRUE(v.ok) << v.problems[0];
  ASSERT_EQ(v.validations.size(), 1u);
  EXPECT_EQ(v.validations[0].summary.verdict, "passed");
  EXPECT_EQ(v.validations[0].summary.worker, "gpu-box-1 (host box1)");
  EXPECT_EQ(v.validations[0].summary.cases_passed, 1);
  EXPECT_FALSE(Verify({kWheel, artifact_.sha256}, "sm_120").ok);

  // A validation job's report is about its target's wheels.
  store::JobRow validate = job_;
  validate.id = job_.id + 100;
  validate.kind = store::kJobValidate;
  validate.target_job_id = job_.id;
  validate.target_attempt = 1;
  farm::v1::ValidationReport failed = passed;
  failed.set_state(farm::v1::VALIDATION_FAILED);
  failed.set_compute_capability("12.0");
  ASSERT_OK(attestor_->AttestValidation(validate, 1, failed, "w-1"));
  v = Verify({kWheel, artifact_.sha256});
  ASSERT_EQ(v.validations.size(), 2u);
  EXPECT_EQ(v.validations[1].summary.verdict, "failed");
  EXPECT_EQ(v.validations[1].summary.compute_capability, "12.0");
}

TEST_F(AttestorTest, RelabelledCopyGetsItsOwnStatementsNamingTheValidatedBytes) {
  ASSERT_OK(attestor_->AttestBuild(artifact_));
  farm::v1::ValidationReport passed;
  passed.set_state(farm::v1::VALIDATION_PASSED);
  passed.set_compute_capability("9.0");
  ASSERT_OK(attestor_->AttestValidation(job_, 1, passed, "w-1"));
  provenance::Subject copy{"attn_example-0.1.0+cu130.sm90-cp311-cp311-linux_x86_64.whl",
                           Sha256Hex("relabelled")};
  ASSERT_OK(attestor_->AttestRelabelled(artifact_.sha256, copy));
  auto v = Verify(copy, "9.0");
  ASSERT_TRUE(v.ok) << v.problems[0];
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("validated as sha256 " + artifact_.sha256), std::string::npos);
  EXPECT_TRUE(Verify({kWheel, artifact_.sha256}).ok) << "the original keeps its own";
}

TEST_F(AttestorTest, RevokingAKeySignsItsStatementsAgainWithTheActiveOne) {
  ASSERT_OK(attestor_->AttestBuild(artifact_));
  auto before = attestor_->Envelopes(artifact_.sha256).value();
  std::string old = keys_->Keys().Active()->keyid;
  auto revoked = attestor_->RevokeKey(old, "test");
  ASSERT_OK(revoked.status());
  auto v = Verify({kWheel, artifact_.sha256});
  ASSERT_TRUE(v.ok) << v.problems[0];
  EXPECT_EQ(v.build_keyid, keys_->Keys().Active()->keyid);
  EXPECT_NE(v.build_keyid, old);
  auto stale = provenance::VerifyWheel({kWheel, artifact_.sha256}, before, keys_->Keys(), {});
  ASSERT_FALSE(stale.ok);
  EXPECT_NE(stale.problems[0].find("revoked"), std::string::npos);
  // Rotation alone re-signs nothing: the retired key's signatures stay valid.
  ASSERT_OK(attestor_->RotateKey().status());
  EXPECT_EQ(Verify({kWheel, artifact_.sha256}).build_keyid, v.build_keyid);
}

}  // namespace
}  // namespace farm::attest
