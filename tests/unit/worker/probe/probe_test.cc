#include "worker/probe/probe.h"

#include <stdlib.h>

#include <algorithm>

#include "common/fs.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(ProbeParseTest, MemInfoInBytes) {
  auto info = ParseMemInfo(
      "MemTotal:       24684092 kB\nMemFree:        23785756 kB\nMemAvailable:   24077512 kB\n");
  ASSERT_OK(info.status());
  EXPECT_EQ(info->total_bytes, 24684092LL * 1024);
  EXPECT_EQ(info->available_bytes, 24077512LL * 1024);
  EXPECT_FALSE(ParseMemInfo("MemFree: 1 kB\n").ok());
  auto old_kernel = ParseMemInfo("MemTotal: 1000 kB\n");  // no MemAvailable line
  ASSERT_OK(old_kernel.status());
  EXPECT_EQ(old_kernel->available_bytes, 1000 * 1024);
}

TEST(ProbeParseTest, CgroupLimits) {
  EXPECT_EQ(ParseCgroupMemoryLimit("max\n"), std::nullopt);
  EXPECT_EQ(ParseCgroupMemoryLimit("8589934592\n"), 8589934592LL);
  EXPECT_EQ(ParseCgroupMemoryLimit("9223372036854771712\n"), std::nullopt);  // v1 unlimited
  EXPECT_EQ(ParseCgroupMemoryLimit("garbage"), std::nullopt);
  EXPECT_EQ(ParseCgroupV2Path("12:cpu:/x\n0::/user.slice/job\n"), "/user.slice/job");
}

TEST(ProbeParseTest, NvccVersionAndCodes) {
  const char* version =
      "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
      "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
  auto v = ParseNvccVersion(version);
  ASSERT_OK(v.status());
  EXPECT_EQ(*v, "13.0");
  EXPECT_EQ(ParseNvccVersion("Cuda compilation tools, release 12.8, V12.8.93").value(), "12.8");
  EXPECT_FALSE(ParseNvccVersion("command not found").ok());

  auto codes =
      ParseGpuCodeList("sm_75\nsm_80\nsm_90\nsm_100\nsm_120\nsm_121\ncompute_121\nbogus\n");
  EXPECT_EQ(codes, (std::vector<std::string>{"sm_75", "sm_80", "sm_90", "sm_100", "sm_120",
                                             "sm_121", "compute_121"}));
  auto variants = CandidateVariantCodes(codes);
  EXPECT_TRUE(Has(variants, "sm_90a"));
  EXPECT_FALSE(Has(variants, "sm_90f"));
  EXPECT_TRUE(Has(variants, "sm_121a"));
  EXPECT_TRUE(Has(variants, "sm_100f"));
  EXPECT_FALSE(Has(variants, "sm_80a"));
}

TEST(ProbeParseTest, PythonProbeOutput) {
  farm::v1::PythonInterpreter py;
  ASSERT_OK(
      ParsePythonProbe("version=3.12\ntorch=2.11.0+cu130\ntorch_cuda=13.0\ncxx11abi=1\n", &py));
  EXPECT_EQ(py.version(), "3.12");
  EXPECT_EQ(py.torch_version(), "2.11.0+cu130");
  EXPECT_EQ(py.torch_cuda(), "13.0");
  EXPECT_TRUE(py.torch_cxx11_abi());
  farm::v1::PythonInterpreter bare;
  ASSERT_OK(ParsePythonProbe("version=3.11\n", &bare));
  EXPECT_EQ(bare.torch_version(), "");
  EXPECT_FALSE(ParsePythonProbe("Traceback ...\n", &bare).ok());
}

TEST(ProbeParseTest, HostFacts) {
  EXPECT_TRUE(KernelReleaseIsWsl2("5.15.167.4-microsoft-standard-WSL2"));
  EXPECT_TRUE(KernelReleaseIsWsl2("6.6.36.3-Microsoft-standard"));
  EXPECT_FALSE(KernelReleaseIsWsl2("6.1.0-26-amd64"));
  EXPECT_EQ(PlatformTag("x86_64"), "linux_x86_64");
  EXPECT_EQ(PlatformTag("aarch64"), "linux_aarch64");
}

TEST(ProbeParseTest, Wsl2LooksForTheWindowsDriverFirst) {
  EXPECT_EQ(CudaDriverCandidates(true),
            (std::vector<std::string>{"/usr/lib/wsl/lib/libcuda.so.1", "libcuda.so.1"}));
  EXPECT_EQ(CudaDriverCandidates(false), (std::vector<std::string>{"libcuda.so.1"}));
}

TEST(ProbeParseTest, Wsl2DriverErrorsSayWhatIsMissingAndTheFix) {
  const std::string fix = "Fix: on Windows, install the current NVIDIA driver";
  std::string no_dir = Wsl2DriverError({});
  EXPECT_NE(no_dir.find("/usr/lib/wsl/lib does not exist"), std::string::npos) << no_dir;
  EXPECT_NE(no_dir.find("/dev/dxg is missing"), std::string::npos) << no_dir;
  EXPECT_NE(no_dir.find(fix), std::string::npos) << no_dir;
  EXPECT_NE(no_dir.find("never install a Linux NVIDIA driver inside WSL2"), std::string::npos);
  std::string no_lib = Wsl2DriverError({.driver_dir_exists = true, .dxg_exists = true});
  EXPECT_NE(no_lib.find("/usr/lib/wsl/lib/libcuda.so.1 does not exist"), std::string::npos);
  EXPECT_EQ(no_lib.find("/dev/dxg"), std::string::npos) << no_lib;
  EXPECT_NE(no_lib.find("wsl --update"), std::string::npos) << no_lib;
  std::string broken = Wsl2DriverError({.driver_dir_exists = true,
                                        .libcuda_exists = true,
                                        .dxg_exists = true,
                                        .load_error = "cuInit failed with CUDA error 100"});
  EXPECT_NE(broken.find("libcuda.so.1 cannot be used: cuInit failed with CUDA error 100"),
            std::string::npos)
      << broken;
  EXPECT_EQ(broken.rfind("WSL2 host without a usable CUDA driver, so no GPU: ", 0), 0u);
}

TEST(ProbeParseTest, CudaVisibleDevicesThatHideEveryGpu) {
  EXPECT_FALSE(CudaVisibleDevicesHidesEveryGpu(nullptr));
  EXPECT_TRUE(CudaVisibleDevicesHidesEveryGpu(""));
  EXPECT_TRUE(CudaVisibleDevicesHidesEveryGpu("-1"));
  EXPECT_TRUE(CudaVisibleDevicesHidesEveryGpu("-1,0"));  // CUDA stops at the first bad entry
  EXPECT_TRUE(CudaVisibleDevicesHidesEveryGpu("none"));
  EXPECT_FALSE(CudaVisibleDevicesHidesEveryGpu("0"));
  EXPECT_FALSE(CudaVisibleDevicesHidesEveryGpu("1,0"));
  EXPECT_FALSE(CudaVisibleDevicesHidesEveryGpu("GPU-8f3c1b2e-0000-0000-0000-000000000000"));
}

TEST(ProbeParseTest, UnifiedMemoryGpus) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_TRUE(IsUnifiedMemoryGpu(true, false, 0, 119 * kGiB));  // the driver says so
  // GB10: host page tables and as much memory as the host.
  EXPECT_TRUE(IsUnifiedMemoryGpu(false, true, 119 * kGiB, 119 * kGiB));
  // GH200: host page tables, but 96 GB of HBM next to 480 GB of host memory.
  EXPECT_FALSE(IsUnifiedMemoryGpu(false, true, 96 * kGiB, 480 * kGiB));
  EXPECT_FALSE(IsUnifiedMemoryGpu(false, false, 80 * kGiB, 80 * kGiB));  // H100 in a VM
  EXPECT_FALSE(IsUnifiedMemoryGpu(false, true, 16 * kGiB, 0));
}

// The real probe on the development machine: no GPU, CUDA 13.0 at /usr/local/cuda.
TEST(SystemProbeTest, ProbesThisMachine) {
  testing::ScopedTempDir dir;
  WorkerConfig config;
  config.work_dir = dir.path();
  config.labels = {{"rack", "a1"}};
  config.max_jobs = 2;
  RealProcessRunner runner;
  SystemProbe probe(config, runner);
  farm::v1::Capabilities caps = probe.Probe();
  EXPECT_FALSE(caps.hostname().empty());
  EXPECT_EQ(caps.platform(), "linux_" + caps.cpu_arch());
  EXPECT_GE(caps.cpu_cores(), 1);
  EXPECT_GT(caps.ram_bytes(), 1LL << 30);
  EXPECT_GT(caps.free_disk_bytes(), 0);
  EXPECT_GT(probe.AvailableMemoryBytes(), 0);
  EXPECT_LE(probe.AvailableMemoryBytes(), caps.ram_bytes() + (1LL << 20));
  EXPECT_EQ(caps.labels().at("rack"), "a1");
  EXPECT_EQ(caps.max_concurrent_jobs(), 2);
  if (access("/dev/nvidia0", F_OK) == 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(caps.gpus_size(), 0);
  // Not WSL2 and no NVIDIA module: a CPU-only host, which is no driver problem.
  EXPECT_FALSE(caps.wsl2());
  EXPECT_EQ(caps.gpu_driver_error(), "");
  EXPECT_EQ(caps.cuda_driver_library(), "");
  if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0) GTEST_SKIP() << "no CUDA toolkit here";
  ASSERT_GE(caps.toolkits_size(), 1);
  const auto& tk = caps.toolkits(0);
  EXPECT_EQ(tk.version(), "13.0");
  std::vector<std::string> codes(tk.gpu_codes().begin(), tk.gpu_codes().end());
  EXPECT_TRUE(Has(codes, "sm_121a"));
  EXPECT_TRUE(Has(codes, "sm_90a"));
  EXPECT_TRUE(Has(codes, "compute_120"));
  EXPECT_FALSE(Has(codes, "sm_89a"));
  ASSERT_GE(caps.pythons_size(), 1);
  EXPECT_EQ(caps.pythons(0).path().rfind("/usr/bin/", 0), 0u) << caps.pythons(0).path();
  EXPECT_FALSE(caps.pythons(0).version().empty());
}

// One dry run confirms every a/f variant at once; when nvcc refuses one of them, each is
// tried alone and only the refused one is left out.
TEST(SystemProbeTest, VariantCodesConfirmedTogetherThenOneByOne) {
  testing::ScopedTempDir dir;
  std::string cuda = dir.path() + "/cuda";
  ASSERT_TRUE(fs::MakeDirs(cuda + "/bin").ok());
  ASSERT_TRUE(fs::WriteFileAtomic(cuda + "/bin/nvcc", "#!/bin/false\n", 0755).ok());
  for (bool refuse_one : {false, true}) {
    int dry_runs = 0;
    testing::ScriptedRunner runner([&](const ProcessSpec& spec) {
      const auto& a = spec.argv;
      if (a.size() < 2 || a[0] != cuda + "/bin/nvcc")
        return testing::FakeRun{1, "", "not this nvcc"};
      if (a[1] == "--version")
        return testing::FakeRun{0, "Cuda compilation tools, release 13.0, V13.0.48"};
      if (a[1] == "--list-gpu-code") return testing::FakeRun{0, "sm_90\nsm_100\n"};
      if (a[1] != "--dryrun") return testing::FakeRun{0, ""};
      ++dry_runs;
      bool refused = refuse_one && Has(a, "arch=compute_100f,code=sm_100f");
      return refused ? testing::FakeRun{1, "", "nvcc fatal: Unsupported gpu architecture"}
                     : testing::FakeRun{};
    });
    ::setenv("CUDA_HOME", cuda.c_str(), 1);
    WorkerConfig config;
    config.work_dir = dir.path() + "/work";
    config.pythons = {"/nonexistent/python3"};
    config.probe_kernels = false;
    SystemProbe probe(config, runner);
    farm::v1::Capabilities caps = probe.Probe();
    ::unsetenv("CUDA_HOME");
    ASSERT_GE(caps.toolkits_size(), 1);
    const auto& tk = caps.toolkits(0);
    ASSERT_EQ(tk.path(), cuda);
    std::vector<std::string> codes(tk.gpu_codes().begin(), tk.gpu_codes().end());
    EXPECT_TRUE(Has(codes, "sm_90a") && Has(codes, "sm_100a")) << refuse_one;
    EXPECT_EQ(Has(codes, "sm_100f"), !refuse_one);
    EXPECT_EQ(dry_runs, refuse_one ? 4 : 1);
  }
}

TEST(SystemProbeTest, ConfiguredPythonsReplaceDiscovery) {
  EXPECT_EQ(DiscoverPythons({"/opt/py/bin/python3"}),
            (std::vector<std::string>{"/opt/py/bin/python3"}));
  auto found = DiscoverPythons({});
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].rfind("/usr/bin/python3", 0), 0u);
}

}  // namespace
}  // namespace farm::agent
