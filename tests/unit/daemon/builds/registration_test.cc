// A worker's registration against in-memory ports.
#include "daemon/builds/registration.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"

namespace farm::builds {
namespace {

class RegistrationTest : public ::testing::Test {
 protected:
  Result<Registration> Register(const auth::Principal& who, const std::string& id,
                                const farm::v1::Capabilities& caps = {}) {
    RegistrationDeps deps{
        .workers = &store_,
        .leases = &store_,
        .clock = &clock_,
        .issue_token = [this](const std::string& name, const std::string& worker_id) {
          issued_.push_back(name + "/" + worker_id);
          return Result<std::string>("token-" + worker_id);
        }};
    return RegisterWorker(deps, who, id, "gpu-box", caps);
  }

  const auth::Principal enroll_{"bootstrap-enroll", "enroll", ""};
  testing::InMemoryStore store_;
  farm::testing::FakeClock clock_;
  std::vector<std::string> issued_;
};

TEST_F(RegistrationTest, AnEnrollmentMakesANewWorkerWithItsToken) {
  auto r = Register(enroll_, "w-asked-for");  // an enroll token cannot choose the id
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->worker_id.starts_with("w-") && r->worker_id != "w-asked-for") << r->worker_id;
  EXPECT_EQ(r->token, "token-" + r->worker_id);
  EXPECT_EQ(issued_, std::vector<std::string>{"gpu-box/" + r->worker_id});
  EXPECT_EQ(r->state, store::WorkerState::kIdle);
  EXPECT_EQ(store_.workers.at(r->worker_id).name, "gpu-box");
}

TEST_F(RegistrationTest, AFailedProbeQuarantines) {
  farm::v1::Capabilities caps;
  caps.set_probe_error("no GPU answered");
  auto r = Register(enroll_, "", caps);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->state, store::WorkerState::kQuarantined);
  EXPECT_EQ(store_.workers.at(r->worker_id).state, store::WorkerState::kQuarantined);
}

TEST_F(RegistrationTest, AWorkerRegisteringAgainRestartedAndLosesItsAttempts) {
  const auth::Principal worker{"gpu-box", "worker", "w-1"};
  int64_t job = store_.AddBuild("attn", "alice", false);
  store_.Lease(job, 1, "w-1");
  EXPECT_EQ(Register(worker, "w-2").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_.jobs[job].state, store::kJobRunning);
  auto r = Register(worker, "w-1");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->worker_id, "w-1");
  EXPECT_EQ(r->token, "");  // it keeps its token
  EXPECT_TRUE(issued_.empty());
  EXPECT_EQ(store_.jobs[job].state, store::kJobPending);
  EXPECT_EQ(store_.jobs[job].error, "worker w-1 restarted");
}

}  // namespace
}  // namespace farm::builds
