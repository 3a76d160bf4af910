// Cancel, retry, drain and revalidate against in-memory ports: who may, what is recorded
// (once per request, refusals included), and what changes.
#include "daemon/builds/control.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"
#include "tests/unit/daemon/builds/recording_audit.h"

namespace farm::builds {
namespace {

class ControlTest : public ::testing::Test {
 protected:
  ControlTest()
      : control_(ControlDeps{.builds = &store_,
                             .control = &store_,
                             .artifacts = &store_,
                             .validations = &store_,
                             .workers = &store_,
                             .names = &store_,
                             .clock = &clock_,
                             .audit = &audit_,
                             .max_attempts = 4}) {}

  const Principal alice_{"alice", "submitter", ""};
  const Principal bob_{"bob", "submitter", ""};
  const Principal admin_{"root", "admin", ""};
  const Principal viewer_{"vera", "viewer", ""};
  testing::InMemoryStore store_;
  farm::testing::FakeClock clock_;
  testing::RecordingAudit audit_;
  Control control_;
};

TEST_F(ControlTest, OnlyTheOwnerOrAnAdminCancelsAndEachRequestIsRecordedOnce) {
  int64_t build = store_.AddBuild("attn", "alice", /*succeeded=*/false);
  EXPECT_EQ(control_.CancelBuild(bob_, build).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(control_.CancelBuild(viewer_, build).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_.builds[build].state, store::kBuildQueued);
  ASSERT_OK(control_.CancelBuild(alice_, build));
  EXPECT_EQ(store_.builds[build].state, store::kBuildCancelled);
  EXPECT_EQ(store_.jobs[build].cancelled_by, "alice");
  EXPECT_EQ(control_.CancelBuild(admin_, build).code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(audit_.records.size(), 4u);
  for (const auto& r : audit_.records) {
    EXPECT_EQ(r.action, audit::Action::kBuildCancel);
    EXPECT_EQ(r.target, "build " + std::to_string(build));
  }
  EXPECT_EQ(audit_.records[0].principal, "bob");
  EXPECT_EQ(audit_.records[0].outcome, StatusCode::kPermissionDenied);
  EXPECT_EQ(audit_.records[1].principal, "vera");  // a role too weak is recorded too
  EXPECT_EQ(audit_.records[2].outcome, StatusCode::kOk);
  EXPECT_EQ(audit_.records[3].outcome, StatusCode::kFailedPrecondition);
}

TEST_F(ControlTest, RetryNeedsTheRecipeNameAsWellAsTheBuild) {
  int64_t job = store_.AddBuild("attn", "alice", false);
  store_.jobs[job].state = store::kJobFailed;
  // The name went to bob: alice may no longer build under it, so not retry either.
  store_.names["attn"] = {"attn", "bob", 0, 0};
  EXPECT_EQ(control_.RetryJob(alice_, job).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_.jobs[job].state, store::kJobFailed);
  store_.names["attn"].owner = "alice";
  ASSERT_OK(control_.RetryJob(alice_, job));
  EXPECT_EQ(store_.jobs[job].state, store::kJobPending);
  EXPECT_EQ(control_.RetryJob(alice_, 424242).code(), StatusCode::kNotFound);
  ASSERT_EQ(audit_.records.size(), 3u);
  EXPECT_EQ(audit_.records[1].action, audit::Action::kJobRetry);
  EXPECT_EQ(audit_.records[1].outcome, StatusCode::kOk);
}

TEST_F(ControlTest, DrainTakesAnIdOrAUniqueNameAndAnAdmin) {
  store_.workers["w-1"] = {.id = "w-1", .name = "gpu-a"};
  store_.workers["w-2"] = {.id = "w-2", .name = "gpu-b"};
  store_.workers["w-3"] = {.id = "w-3", .name = "gpu-b"};
  EXPECT_EQ(control_.DrainWorker(alice_, "w-1", true).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_FALSE(store_.workers["w-1"].drain_requested);
  auto id = control_.DrainWorker(admin_, "gpu-a", true);
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, "w-1");
  EXPECT_TRUE(store_.workers["w-1"].drain_requested);
  ASSERT_OK(control_.DrainWorker(admin_, "w-1", false).status());
  EXPECT_FALSE(store_.workers["w-1"].drain_requested);
  EXPECT_EQ(control_.DrainWorker(admin_, "gpu-b", true).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(control_.DrainWorker(admin_, "gpu-z", true).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(audit_.records.size(), 5u);
  EXPECT_EQ(audit_.records[1].action, audit::Action::kWorkerDrain);
  EXPECT_EQ(audit_.records[1].target, "worker gpu-a");
  EXPECT_EQ(audit_.records[2].action, audit::Action::kWorkerUndrain);
}

TEST_F(ControlTest, RevalidationQueuesAJobForTheWheelOfTheCountingAttempt) {
  int64_t job = store_.AddBuild("attn", "alice", /*succeeded=*/true);
  int64_t wheel = store_.AddArtifact(job, 1, std::string(64, 'a'));
  int64_t stale = store_.AddArtifact(job, 0, std::string(64, 'b'));  // a reused wheel counts
  auto queued = control_.RevalidateArtifact(alice_, wheel);
  ASSERT_OK(queued.status());
  EXPECT_EQ(queued->kind, store::kJobValidate);
  EXPECT_EQ(queued->target_job_id, job);
  EXPECT_EQ(queued->target_attempt, 1);
  EXPECT_EQ(queued->max_attempts, 4);
  EXPECT_EQ(store_.jobs.count(queued->id), 1u);
  ASSERT_OK(control_.RevalidateArtifact(alice_, stale).status());
  EXPECT_EQ(control_.RevalidateArtifact(bob_, wheel).status().code(),
            StatusCode::kPermissionDenied);
  store_.jobs[job].attempt = 2;  // attempt 1 no longer counts
  EXPECT_EQ(control_.RevalidateArtifact(alice_, wheel).status().code(),
            StatusCode::kFailedPrecondition);
  store_.jobs[job].state = store::kJobFailed;
  EXPECT_EQ(control_.RevalidateArtifact(admin_, stale).status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_EQ(audit_.records.size(), 5u);
  EXPECT_EQ(audit_.records[0].done, "job " + std::to_string(queued->id));
}

}  // namespace
}  // namespace farm::builds
