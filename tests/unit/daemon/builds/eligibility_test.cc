// Which worker may take a job, against in-memory ports.
#include "daemon/builds/eligibility.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"

namespace farm::builds {
namespace {

class EligibilityTest : public ::testing::Test {
 protected:
  void AddWorker(const std::string& id, int max_jobs, bool unified = false) {
    farm::v1::Capabilities caps;
    caps.set_max_concurrent_jobs(max_jobs);
    farm::v1::Gpu* gpu = caps.add_gpus();
    gpu->set_unified_memory(unified);
    gpu->set_memory_bytes(int64_t{128} << 30);
    store_.workers[id] = {.id = id, .name = "gpu-" + id, .capabilities = caps.SerializeAsString()};
  }
  Result<std::optional<sched::Dispatcher::Waiter>> May(const std::string& id) {
    return MayTakeJob({.workers = &store_, .visits = &store_}, id);
  }

  testing::InMemoryStore store_;
};

TEST_F(EligibilityTest, DrainingQuarantinedOrFullWorkersTakeNothing) {
  AddWorker("w-1", 1);
  auto free = May("w-1");
  ASSERT_OK(free.status());
  ASSERT_TRUE(free->has_value());
  EXPECT_EQ((*free)->worker_name, "gpu-w-1");
  EXPECT_EQ(store_.visits, 1);  // one visit to the store for all its reads
  int64_t job = store_.AddBuild("attn", "alice", false);
  store_.Lease(job, 1, "w-1");
  EXPECT_FALSE(May("w-1")->has_value());  // at its limit of one job
  AddWorker("w-2", 4);
  store_.workers["w-2"].drain_requested = true;
  EXPECT_FALSE(May("w-2")->has_value());
  store_.workers["w-2"].drain_requested = false;
  store_.workers["w-2"].state = store::WorkerState::kQuarantined;
  EXPECT_FALSE(May("w-2")->has_value());
  store_.workers["w-2"].state = store::WorkerState::kDraining;
  EXPECT_FALSE(May("w-2")->has_value());
  EXPECT_EQ(May("w-9").status().code(), StatusCode::kNotFound);
}

TEST_F(EligibilityTest, AUnifiedMemoryHostCountsWhatItsRunningValidationsHold) {
  AddWorker("w-1", 4, /*unified=*/true);
  int64_t job = store_.AddBuild("attn", "alice", false);
  store_.jobs[job].validation_mib = 8 * 1024;
  store_.Lease(job, 1, "w-1");
  auto waiter = May("w-1");
  ASSERT_OK(waiter.status());
  ASSERT_TRUE(waiter->has_value());
  EXPECT_GT((*waiter)->held_gb, 0);
}

}  // namespace
}  // namespace farm::builds
