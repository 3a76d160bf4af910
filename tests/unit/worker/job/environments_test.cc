// The worker's side of provisioned environments: a lease's spec turned into the
// provisioner's, "the newest torch X.Y" resolved among an index's files, and a worker that
// does not provision refusing before anything is fetched.
#include "worker/job/environments.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

TEST(EnvironmentsTest, TurnsALeaseSpecIntoTheProvisionersSpec) {
  farm::v1::ProvisionSpec spec;
  spec.set_python("3.12");
  spec.set_torch_minor("2.11");
  spec.set_torch_version("2.11.0");
  spec.set_torch_variant("cu130");
  spec.add_requirements("setuptools==80.9.0");
  spec.set_cuda("13.0");
  env::EnvSpec out = ToEnvSpec(spec, "2.11.0+cu130");
  EXPECT_EQ(out.python, "3.12");
  EXPECT_EQ(out.torch, "2.11.0+cu130");
  EXPECT_EQ(out.cuda, "13.0");
  EXPECT_EQ(out.platform, "linux_x86_64");
  ASSERT_EQ(out.requirements.size(), 1u);
  EXPECT_OK(env::Validate(out));
  // The pins of the torch release installed join the requirements; another release's do not.
  (*spec.mutable_torch_requirements())["2.11.0+cu130"].add_pins("triton==3.6.0");
  (*spec.mutable_torch_requirements())["2.11.1+cu130"].add_pins("triton==3.6.1");
  out = ToEnvSpec(spec, "2.11.0+cu130");
  EXPECT_EQ(out.requirements, (std::vector<std::string>{"setuptools==80.9.0", "triton==3.6.0"}));
}

TEST(EnvironmentsTest, NewestTorchOfAMinorAndVariant) {
  const std::vector<std::string> files = {
      "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
      "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
      "torch-2.9.10+cu128-cp312-cp312-manylinux_2_28_x86_64.whl",    // another variant
      "torch-2.10.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",    // another minor
      "torch-2.9.2rc1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",  // a pre-release
      "torchvision-2.9.5+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
      "torch-2.9.3+cu130.tar.gz",
  };
  auto newest = NewestTorch(files, "2.9", "cu130");
  ASSERT_OK(newest.status());
  EXPECT_EQ(*newest, "2.9.1+cu130");
  auto none = NewestTorch(files, "2.8", "cu130");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("has 2.10.0+cu130, 2.9.0+cu130"), std::string::npos)
      << none.status().message();
}

TEST(EnvironmentsTest, IndexUrlsNameTheVariant) {
  EXPECT_EQ(env::ExpandVariant("https://download.pytorch.org/whl/{variant}/", "cu128"),
            "https://download.pytorch.org/whl/cu128/");
  EXPECT_EQ(env::ExpandVariant("http://farm/upstream/pypi/{variant}/simple/", ""),
            "http://farm/upstream/pypi/cpu/simple/");
  EXPECT_EQ(env::ExpandVariant("https://mirror/simple/", "cu130"), "https://mirror/simple/");
}

TEST(EnvironmentsTest, AWorkerThatDoesNotProvisionRefusesWithoutFetching) {
  ProvisionConfig off;
  RealProcessRunner runner;
  Environments envs(off, &runner, &RealClock());
  EXPECT_FALSE(envs.Advertise().enabled());
  farm::v1::ProvisionSpec spec;
  spec.set_python("3.11");
  auto made = envs.Provision(spec, {}, "/nonexistent", nullptr);
  EXPECT_EQ(made.status().code(), StatusCode::kFailedPrecondition);
}

TEST(EnvironmentsTest, WithoutAnIndexOrFarmdsCacheItSaysWhatToGive) {
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
  farm::v1::ProvisionSpec spec;
  spec.set_python("3.11");
  auto made = envs.Provision(spec, {}, "/nonexistent", nullptr);
  EXPECT_EQ(made.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(made.status().message().find("--provision-index"), std::string::npos);
  envs.SetFarmUpstream("http://127.0.0.1:1");
  EXPECT_EQ(envs.SourceText(), "from the farm's cache");
}

}  // namespace
}  // namespace farm::agent
