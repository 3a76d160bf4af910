// The worker's side of provisioned environments: a lease's spec (with the lock farmd
// resolved) turned into the provisioner's, the sources following farmd to a new address,
// and a worker that does not provision refusing before anything is fetched.
#include "worker/job/environments.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/lock/env_lock.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

std::string TorchLockText() {
  lock::EnvLock l;
  l.python = "3.12";
  l.platform = "linux_x86_64";
  l.index_name = "cu130";
  l.packages = {{"torch", "2.11.0+cu130", "https://i/cu130/",
                 "torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", "https://i/t.whl",
                 std::string(64, 'a'), 10}};
  return lock::ToToml(l);
}

TEST(EnvironmentsTest, TurnsALeaseSpecWithItsLockIntoTheProvisionersSpec) {
  farm::v1::ProvisionSpec spec;
  spec.set_python("3.12");
  spec.set_cuda("13.0");
  spec.set_lock(TorchLockText());
  auto out = ToEnvSpec(spec);
  ASSERT_OK(out.status());
  EXPECT_EQ(out->python, "3.12");
  EXPECT_EQ(out->cuda, "13.0");
  EXPECT_EQ(out->platform, "linux_x86_64");
  EXPECT_EQ(env::TorchOf(*out), "2.11.0+cu130");
  EXPECT_OK(env::Validate(*out));
  // A farmd that resolves nothing, or a lock that is not one, is refused before anything
  // is fetched.
  spec.clear_lock();
  EXPECT_EQ(ToEnvSpec(spec).status().code(), StatusCode::kInvalidArgument);
  spec.set_lock("lock-version = \"1.0\"\n[[packages]]\nname = \"x\"\n");
  EXPECT_EQ(ToEnvSpec(spec).status().code(), StatusCode::kInvalidArgument);
}

TEST(EnvironmentsTest, SourcesFollowFarmdToItsNewAddress) {
  ProvisionConfig on;
  on.enabled = true;
  RealProcessRunner runner;
  Environments envs(on, &runner, &RealClock());
  EXPECT_TRUE(envs.Sources().files_base.empty());  // before farmd said where it is
  envs.SetFarmUpstream("http://127.0.0.1:42893", "farm_wor_0123456789");
  EXPECT_EQ(envs.Sources().files_base, "http://127.0.0.1:42893/upstream/files/");
  EXPECT_EQ(envs.Sources().redist_url, "http://127.0.0.1:42893/upstream/tree/redist/");
  EXPECT_EQ(envs.SourceText(), "from the farm's cache");
  envs.SetFarmUpstream("http://127.0.0.1:37115", "farm_wor_0123456789");  // another port
  env::ProvisionSources now = envs.Sources();
  EXPECT_EQ(now.files_base, "http://127.0.0.1:37115/upstream/files/");
  EXPECT_EQ(now.python_release_url, "http://127.0.0.1:37115/upstream/tree/python/");
  EXPECT_EQ(now.farm_base, "http://127.0.0.1:37115/");
  // The worker's own sources win over farmd's.
  on.redist = "https://nv.example/redist/";
  Environments own(on, &runner, &RealClock());
  own.SetFarmUpstream("http://127.0.0.1:37115", "farm_wor_0123456789");
  EXPECT_EQ(own.Sources().redist_url, "https://nv.example/redist/");
}

TEST(EnvironmentsTest, AWorkerThatDoesNotProvisionRefusesWithoutFetching) {
  ProvisionConfig off;
  RealProcessRunner runner;
  Environments envs(off, &runner, &RealClock());
  EXPECT_FALSE(envs.Advertise().enabled());
  farm::v1::ProvisionSpec spec;
  spec.set_python("3.11");
  spec.set_lock(TorchLockText());
  auto made = envs.Provision(spec, {}, "/nonexistent", nullptr);
  EXPECT_EQ(made.status().code(), StatusCode::kFailedPrecondition);
}

TEST(EnvironmentsTest, AWorkerWithoutARedistOfItsOwnFetchesToolkitsThroughFarmd) {
  ProvisionConfig on;
  on.enabled = true;
  on.cache_dir = ::testing::TempDir() + "/environments-test-cache";
  RealProcessRunner runner;
  Environments envs(on, &runner, &RealClock());
  farm::v1::Provisioning p = envs.Advertise();
  EXPECT_TRUE(p.enabled());
  EXPECT_TRUE(p.fetches_toolkits());  // through farmd, once it registered
  // ... with no redist folder of its own: farmd judges whether it serves one.
  EXPECT_TRUE(p.toolkits_through_farm());
  ProvisionConfig own = on;
  own.redist = "https://developer.download.nvidia.com/compute/cuda/redist/";
  EXPECT_FALSE(Environments(own, &runner, &RealClock()).Advertise().toolkits_through_farm());
}

}  // namespace
}  // namespace farm::agent
