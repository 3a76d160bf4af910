#include "worker/probe/probe_kernels.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

// A toolkit whose "nvcc" writes a stand-in probe binary that prints `json` and exits with
// `code`, so the verdict logic runs on real processes without a GPU.
std::string FakeToolkit(const std::string& root, const std::string& json, int code) {
  std::string bin = root + "/bin";
  EXPECT_OK(fs::MakeDirs(bin));
  std::string nvcc =
      "#!/bin/sh\n"
      "out=''\n"
      "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
      "printf '#!/bin/sh\\necho \\047" +
      json + "\\047\\nexit " + std::to_string(code) +
      "\\n' > \"$out\"\n"
      "chmod +x \"$out\"\n";
  EXPECT_OK(fs::WriteFileAtomic(bin + "/nvcc", nvcc, 0755));
  return root;
}

farm::v1::Capabilities Caps(const std::string& toolkit, const std::string& code) {
  farm::v1::Capabilities caps;
  farm::v1::Gpu* gpu = caps.add_gpus();
  gpu->set_name("NVIDIA GB10");
  gpu->set_cc_major(12);
  gpu->set_cc_minor(1);
  farm::v1::CudaToolkit* t = caps.add_toolkits();
  t->set_path(toolkit);
  t->set_version("13.0");
  t->add_gpu_codes(code);
  return caps;
}

TEST(ProbeKernelsTest, TheSourceIsBuiltIn) {
  EXPECT_NE(ProbeKernelSource().find("__global__"), std::string::npos);
}

TEST(ProbeKernelsTest, TheNewestToolkitThatEmitsTheCodeIsChosen) {
  farm::v1::Capabilities caps = Caps("/opt/cuda-12.8", "sm_90");
  caps.mutable_toolkits(0)->set_version("12.8");
  farm::v1::CudaToolkit* newer = caps.add_toolkits();
  newer->set_path("/opt/cuda-13.0");
  newer->set_version("13.0");
  newer->add_gpu_codes("sm_90");
  newer->add_gpu_codes("sm_121");
  EXPECT_EQ(ToolkitFor(caps, "sm_90")->path(), "/opt/cuda-13.0");
  EXPECT_EQ(ToolkitFor(caps, "sm_121")->path(), "/opt/cuda-13.0");
  EXPECT_FALSE(ToolkitFor(caps, "sm_100").has_value());
}

TEST(ProbeKernelsTest, APassingProbeSaysWhatItChecked) {
  testing::ScopedTempDir dir;
  std::string tk =
      FakeToolkit(dir.path() + "/cuda", R"({"ok":true,"message":"max error 1e-07"})", 0);
  RealProcessRunner runner;
  ProbeKernelVerdict v = RunProbeKernels(runner, Caps(tk, "sm_121"), dir.path() + "/probe");
  EXPECT_TRUE(v.ran);
  EXPECT_EQ(v.error, "");
  EXPECT_EQ(v.summary, "GPU 0 (NVIDIA GB10, cc 12.1): max error 1e-07");
  EXPECT_TRUE(fs::Exists(dir.path() + "/probe/probe.cu"));
}

TEST(ProbeKernelsTest, WrongNumbersOrAMissingTargetQuarantine) {
  testing::ScopedTempDir dir;
  std::string tk = FakeToolkit(dir.path() + "/cuda",
                               R"({"ok":false,"message":"attention max error 0.5 > 2e-4"})", 1);
  RealProcessRunner runner;
  ProbeKernelVerdict wrong = RunProbeKernels(runner, Caps(tk, "sm_121"), dir.path() + "/probe");
  EXPECT_EQ(wrong.error,
            "probe kernel failed on GPU 0 (NVIDIA GB10, cc 12.1): exit code 1: "
            "attention max error 0.5 > 2e-4");
  ProbeKernelVerdict no_target = RunProbeKernels(runner, Caps(tk, "sm_120"), dir.path() + "/p2");
  EXPECT_EQ(no_target.error,
            "probe kernel: no CUDA toolkit here emits sm_121 for GPU 0 (NVIDIA GB10, cc 12.1)");
}

TEST(ProbeKernelsTest, NothingToProveWithoutAGpuOrAToolkit) {
  RealProcessRunner runner;
  ProbeKernelVerdict none = RunProbeKernels(runner, farm::v1::Capabilities(), "/nonexistent");
  EXPECT_FALSE(none.ran);
  EXPECT_EQ(none.error, "");
  EXPECT_EQ(none.summary, "no GPU to probe");
}

}  // namespace
}  // namespace farm::agent
