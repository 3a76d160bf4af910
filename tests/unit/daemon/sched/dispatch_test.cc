// AcquireJob through the dispatcher, over real gRPC: every job goes to exactly one waiting
// poll whose worker can run it, a poll whose client left takes nothing, a worker's newer
// poll ends its older one, and shutdown ends waiting polls. And the classes polls are
// placed by: alike hosts share one, hosts that may place differently never do.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <set>

#include "daemon/api/worker/worker_service.h"
#include "daemon/sched/dispatcher.h"
#include "tests/unit/daemon/api/rpc_fixture.h"

namespace farm::api {
namespace {

class DispatchTest : public RpcTest {
 protected:
  // Submits kRecipe (one cell) `n` times with --force, so no build waits on another.
  std::vector<int64_t> SubmitJobs(int n) {
    std::vector<int64_t> ids;
    for (int i = 0; i < n; ++i) {
      farm::v1::SubmitBuildRequest req;
      req.set_recipe_yaml(kRecipe);
      req.set_force(true);
      farm::v1::SubmitBuildResponse resp;
      auto s = farm_->SubmitBuild(Ctx(admin_).get(), req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      for (const auto& j : resp.build().jobs()) ids.push_back(j.id());
    }
    return ids;
  }

  // Starts a long poll of `wait_ms` on its own thread; the future holds the job id (0: none).
  std::future<int64_t> Poll(const std::string& id, const std::string& token, int wait_ms) {
    return std::async(std::launch::async, [this, id, token, wait_ms] {
      farm::v1::AcquireJobRequest req;
      req.set_worker_id(id);
      req.set_wait_ms(wait_ms);
      farm::v1::AcquireJobResponse resp;
      auto s = worker_->AcquireJob(Ctx(token).get(), req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      return resp.has_job() ? resp.job().job_id() : int64_t{0};
    });
  }
};

TEST_F(DispatchTest, EachJobGoesToExactlyOneWaitingPoll) {
  std::vector<farm::v1::RegisterResponse> builders;
  for (int i = 0; i < 6; ++i) builders.push_back(RegisterBuilder());
  std::vector<std::future<int64_t>> polls;
  for (const auto& b : builders) polls.push_back(Poll(b.worker_id(), b.worker_token(), 1500));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the polls are waiting
  auto jobs = SubmitJobs(4);
  ASSERT_EQ(jobs.size(), 4u);
  std::multiset<int64_t> got;
  for (auto& p : polls) got.insert(p.get());
  EXPECT_EQ(got.count(0), 2u) << "six polls, four jobs";
  for (int64_t job : jobs) EXPECT_EQ(got.count(job), 1u) << "job " << job;
  for (int64_t job : jobs) {
    auto attempts = server_->context()->store->ListAttempts(job);
    ASSERT_TRUE(attempts.ok());
    EXPECT_EQ(attempts->size(), 1u);
  }
}

TEST_F(DispatchTest, OnlyAWorkerThatCanRunTheJobGetsIt) {
  auto [bare_id, bare_token] = RegisterWorker();  // no toolkit, no Python
  auto builder = RegisterBuilder();
  auto bare = Poll(bare_id, bare_token, 800);
  auto able = Poll(builder.worker_id(), builder.worker_token(), 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto jobs = SubmitJobs(1);
  EXPECT_EQ(able.get(), jobs.at(0));
  EXPECT_EQ(bare.get(), 0);
}

TEST_F(DispatchTest, APollWhoseClientLeftTakesNothing) {
  auto gone = RegisterBuilder();
  {
    farm::v1::AcquireJobRequest req;
    req.set_worker_id(gone.worker_id());
    req.set_wait_ms(10000);
    farm::v1::AcquireJobResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + gone.worker_token());
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    EXPECT_EQ(worker_->AcquireJob(&ctx, req, &resp).error_code(), StatusCode::DEADLINE_EXCEEDED);
  }
  auto builder = RegisterBuilder();
  auto poll = Poll(builder.worker_id(), builder.worker_token(), 5000);
  auto jobs = SubmitJobs(1);
  EXPECT_EQ(poll.get(), jobs.at(0));
  auto job = server_->context()->store->GetJob(jobs.at(0));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->worker_id, builder.worker_id());
}

TEST_F(DispatchTest, ANewerPollOfAWorkerEndsItsOlderOneEmpty) {
  auto builder = RegisterBuilder();
  auto older = Poll(builder.worker_id(), builder.worker_token(), 10000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto newer = Poll(builder.worker_id(), builder.worker_token(), 10000);
  // Well before its own 10 s deadline: the newer poll replaced it.
  ASSERT_EQ(older.wait_for(std::chrono::seconds(8)), std::future_status::ready);
  EXPECT_EQ(older.get(), 0);
  auto jobs = SubmitJobs(1);
  EXPECT_EQ(newer.get(), jobs.at(0));
}

TEST_F(DispatchTest, ShutdownEndsWaitingPolls) {
  auto builder = RegisterBuilder();
  auto poll = Poll(builder.worker_id(), builder.worker_token(), 10000);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_->Shutdown();
  EXPECT_EQ(poll.get(), 0);
}

farm::v1::Capabilities X86Host(const std::string& hostname) {
  farm::v1::Capabilities caps;
  caps.set_hostname(hostname);
  caps.set_platform("linux_x86_64");
  caps.set_cpu_arch("x86_64");
  caps.set_ram_bytes(int64_t{64} << 30);
  caps.set_free_disk_bytes(int64_t{100} << 30);
  caps.add_pythons()->set_version("3.12");
  caps.add_toolkits()->set_version("13.0");
  farm::v1::Gpu* gpu = caps.add_gpus();
  gpu->set_uuid("GPU-" + hostname);
  gpu->set_cc_major(9);
  return caps;
}

// A GB10: aarch64, its GPU sharing the host's memory.
farm::v1::Capabilities Gb10Host(const std::string& hostname) {
  farm::v1::Capabilities caps = X86Host(hostname);
  caps.set_platform("linux_aarch64");
  caps.set_cpu_arch("aarch64");
  caps.mutable_gpus(0)->set_cc_major(12);
  caps.mutable_gpus(0)->set_cc_minor(1);
  caps.mutable_gpus(0)->set_unified_memory(true);
  return caps;
}

TEST(DispatchClassTest, AlikeHostsShareAClassAndHostsThatMayPlaceDifferentlyDoNot) {
  auto key = sched::Dispatcher::ClassKey;
  // Names, GPU uuids and free disk say nothing about placement.
  farm::v1::Capabilities other = X86Host("host-2");
  other.set_free_disk_bytes(1);
  EXPECT_EQ(key(X86Host("host-1"), 0), key(other, 0));
  // Memory a host's running jobs hold counts only where the GPU shares that memory.
  EXPECT_EQ(key(X86Host("host-1"), 0), key(X86Host("host-1"), 24));
  EXPECT_EQ(key(Gb10Host("gb10-1"), 0), key(Gb10Host("gb10-2"), 0));
  EXPECT_NE(key(Gb10Host("gb10-1"), 0), key(Gb10Host("gb10-2"), 24));
  EXPECT_EQ(key(Gb10Host("gb10-1"), 8.5), key(Gb10Host("gb10-2"), 8.5));
  // The CPU, the RAM (compile jobs' memory) and the GPUs place differently.
  farm::v1::Capabilities arm = X86Host("host-1");
  arm.set_cpu_arch("aarch64");
  EXPECT_NE(key(X86Host("host-1"), 0), key(arm, 0));
  farm::v1::Capabilities small = X86Host("host-1");
  small.set_ram_bytes(int64_t{8} << 30);
  EXPECT_NE(key(X86Host("host-1"), 0), key(small, 0));
  farm::v1::Capabilities two_gpus = X86Host("host-1");
  *two_gpus.add_gpus() = two_gpus.gpus(0);
  EXPECT_NE(key(X86Host("host-1"), 0), key(two_gpus, 0));
}

}  // namespace
}  // namespace farm::api

namespace farm::api {
namespace {

// Each lease names the compile-cache namespace of the principal that submitted the build
// and its recipe: two principals building the same recipe name never share one.
TEST_F(DispatchTest, ALeaseNamesTheSubmittersOwnCacheNamespace) {
  farm::v1::CreateTokenRequest create;
  create.set_role("submitter");
  create.set_name("mallory");
  farm::v1::CreateTokenResponse token;
  ASSERT_TRUE(farm_->CreateToken(Ctx(admin_).get(), create, &token).ok());
  std::map<int64_t, std::string> submitted_by;
  // mallory first: the name becomes hers, and an admin may still build under it.
  for (const std::string& who : {token.token(), admin_}) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(kRecipe);
    req.set_force(true);
    farm::v1::SubmitBuildResponse resp;
    auto s = farm_->SubmitBuild(Ctx(who).get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    submitted_by[resp.build().jobs(0).id()] = resp.build().submitted_by();
  }
  std::map<int64_t, std::string> namespaces;
  for (int i = 0; i < 2; ++i) {
    auto builder = RegisterBuilder();
    farm::v1::AcquireJobRequest req;
    req.set_worker_id(builder.worker_id());
    req.set_wait_ms(2000);
    farm::v1::AcquireJobResponse resp;
    ASSERT_TRUE(worker_->AcquireJob(Ctx(builder.worker_token()).get(), req, &resp).ok());
    ASSERT_TRUE(resp.has_job());
    namespaces[resp.job().job_id()] = resp.job().cache_namespace();
  }
  ASSERT_EQ(namespaces.size(), 2u);
  std::set<std::string> distinct;
  for (const auto& [job, ns] : namespaces) {
    EXPECT_EQ(ns, CacheNamespaceId(submitted_by.at(job), "odd-recipe")) << job;
    EXPECT_EQ(ns.size(), 32u);
    distinct.insert(ns);
  }
  EXPECT_EQ(distinct.size(), 2u);
  EXPECT_NE(CacheNamespaceId("a", "bc"), CacheNamespaceId("ab", "c"));
}

}  // namespace
}  // namespace farm::api
