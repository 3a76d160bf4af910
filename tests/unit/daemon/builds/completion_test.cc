// The end of an attempt against in-memory ports: who may report, the no-wheel rule, the
// stable-ABI fan-out, validation signing, releasing held jobs and the retry plan.
#include "daemon/builds/completion.h"

#include <gtest/gtest.h>

#include "daemon/sched/retry.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"

namespace farm::builds {
namespace {

farm::v1::MatrixCell Cell(const std::string& torch) {
  farm::v1::MatrixCell c;
  c.set_python("3.12");
  c.set_torch(torch);
  c.set_cuda("13.0");
  return c;
}

class CompletionTest : public ::testing::Test {
 protected:
  CompletionTest() {
    farm::v1::Recipe recipe;
    recipe.set_name("attn");
    recipe.mutable_retry()->set_backoff_seconds(30);
    job_ = store_.AddBuild("attn", "alice", false);
    store_.builds[job_].recipe = recipe.SerializeAsString();
    store_.jobs[job_].cell = Cell("2.9").SerializeAsString();
    store_.Lease(job_, 1, "w-1");
  }

  Completer MakeCompleter() {
    return Completer(
        {.builds = &store_,
         .artifacts = &store_,
         .leases = &store_,
         .graph = &store_,
         .recipes = &recipes_,
         .clock = &clock_,
         .sign_validation = [this](const store::JobRow& job, int attempt,
                                   const farm::v1::ValidationReport&, const std::string& worker) {
           signed_.push_back(std::to_string(job.id) + "/" + std::to_string(attempt) + "/" + worker);
           return sign_result_;
         }});
  }

  farm::v1::CompleteJobRequest Success(int64_t job, int attempt) {
    farm::v1::CompleteJobRequest req;
    req.set_job_id(job);
    req.set_attempt(attempt);
    req.set_cause(farm::v1::CAUSE_COMPLETED);
    req.set_exit_code(0);
    return req;
  }

  testing::InMemoryStore store_;
  RecipeCache recipes_{&store_};
  farm::testing::FakeClock clock_;
  std::vector<std::string> signed_;
  Status sign_result_ = Status::Ok();
  int64_t job_ = 0;
};

TEST_F(CompletionTest, OnlyTheWorkerHoldingTheAttemptReports) {
  Completer completer = MakeCompleter();
  Status release;
  EXPECT_EQ(completer.Complete("w-2", Success(job_, 1), &release).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(completer.Complete("w-1", Success(job_, 2), &release).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_.completions.empty());
}

TEST_F(CompletionTest, ASuccessWithoutAWheelIsAFailedBuild) {
  Completer completer = MakeCompleter();
  Status release;
  auto state = completer.Complete("w-1", Success(job_, 1), &release);
  ASSERT_OK(state.status());
  EXPECT_EQ(*state, store::kJobFailed);
  ASSERT_EQ(store_.completions.size(), 1u);
  const store::CompletionReport& r = store_.completions[0];
  EXPECT_EQ(r.cause, store::kCauseBuildFailed);
  EXPECT_EQ(r.detail, "the attempt reported success but uploaded no wheel");
  EXPECT_EQ(r.worker_id, "w-1");
  EXPECT_EQ(r.retry_not_before_ms, clock_.NowUnixMs() + 30'000);  // the recipe's back-off
  EXPECT_EQ(store_.held_resolutions, 1);  // it ended: what waits on it is settled
}

TEST_F(CompletionTest, AnInfrastructureFailureGetsMoreAttemptsWithALongerBackOff) {
  store_.jobs[job_].max_attempts = 2;
  store_.Lease(job_, 3, "w-1");
  Completer completer = MakeCompleter();
  farm::v1::CompleteJobRequest req = Success(job_, 3);
  req.set_cause(farm::v1::CAUSE_INFRASTRUCTURE);
  req.set_exit_code(1);
  Status release;
  ASSERT_OK(completer.Complete("w-1", req, &release).status());
  ASSERT_EQ(store_.completions.size(), 1u);
  const store::CompletionReport& r = store_.completions[0];
  EXPECT_EQ(r.max_attempts, sched::kInfrastructureAttempts);          // not the job's 2
  EXPECT_EQ(r.retry_not_before_ms, clock_.NowUnixMs() + 4 * 30'000);  // doubled twice
}

TEST_F(CompletionTest, AStableAbiSuccessQueuesItsOtherTorchesAndSignsItsValidation) {
  farm::v1::JobNeeds needs;
  for (const char* torch : {"2.9", "2.10", "2.11"}) *needs.add_validate_in() = Cell(torch);
  store_.jobs[job_].needs = needs.SerializeAsString();
  store_.AddArtifact(job_, 1, std::string(64, 'a'));
  farm::v1::CompleteJobRequest req = Success(job_, 1);
  req.mutable_validation()->set_state(farm::v1::VALIDATION_PASSED);
  Completer completer = MakeCompleter();
  Status release;
  auto state = completer.Complete("w-1", req, &release);
  ASSERT_OK(state.status());
  EXPECT_EQ(*state, store::kJobSucceeded);
  ASSERT_EQ(store_.completions.size(), 1u);
  const auto& queued = store_.completions[0].on_success;
  ASSERT_EQ(queued.size(), 2u);  // not its own cell
  for (const store::JobRow& v : queued) {
    EXPECT_EQ(v.kind, store::kJobValidate);
    EXPECT_EQ(v.target_job_id, job_);
    EXPECT_NE(v.cell, store_.jobs[job_].cell);
  }
  EXPECT_EQ(signed_, std::vector<std::string>{std::to_string(job_) + "/1/w-1"});
}

TEST_F(CompletionTest, AFanoutValidationThatDoesNotProveItsTorchFailsAndSigningErrorsOnlyLog) {
  store_.jobs[job_].state = store::kJobSucceeded;
  store::JobRow validation{.id = 77,
                           .build_id = job_,
                           .cell = Cell("2.11").SerializeAsString(),
                           .kind = store::kJobValidate,
                           .target_job_id = job_,
                           .target_attempt = 1};
  store_.jobs[77] = validation;
  store_.Lease(77, 1, "w-gpu");
  farm::v1::CompleteJobRequest req = Success(77, 1);
  req.mutable_validation()->set_state(farm::v1::VALIDATION_FAILED);
  sign_result_ = Status::Unavailable("no key");
  Completer completer = MakeCompleter();
  Status release;
  auto state = completer.Complete("w-gpu", req, &release);
  ASSERT_OK(state.status());  // the report stands without its signature
  EXPECT_EQ(*state, store::kJobFailed);
  ASSERT_EQ(store_.completions.size(), 1u);
  EXPECT_EQ(store_.completions[0].cause, store::kCauseValidationFailed);
  EXPECT_NE(store_.completions[0].detail.find("did not prove this torch"), std::string::npos);
  EXPECT_EQ(signed_.size(), 1u);
}

}  // namespace
}  // namespace farm::builds
