#include "worker/validate/validation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/fs.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::agent {
namespace {

farm::v1::Capabilities CapsWithGpu(int major, int minor) {
  farm::v1::Capabilities caps;
  farm::v1::Gpu* gpu = caps.add_gpus();
  gpu->set_index(0);
  gpu->set_name("NVIDIA H100 80GB HBM3");
  gpu->set_cc_major(major);
  gpu->set_cc_minor(minor);
  return caps;
}

farm::v1::ArchManifest RunsOn(std::vector<std::string> ccs) {
  farm::v1::ArchManifest m;
  m.add_images()->set_arch("sm_90a");
  for (auto& cc : ccs) m.add_runs_on(cc);
  return m;
}

TEST(ValidationGpuTest, OnlyAGpuTheWheelServesIsChosen) {
  EXPECT_TRUE(ChooseValidationGpu(CapsWithGpu(9, 0), RunsOn({"9.0"})).has_value());
  EXPECT_FALSE(ChooseValidationGpu(CapsWithGpu(12, 1), RunsOn({"9.0", "12.0"})).has_value());
  EXPECT_FALSE(ChooseValidationGpu(farm::v1::Capabilities(), RunsOn({"9.0"})).has_value());
  // A wheel without device code (a Triton or pure-Python package) runs on any GPU.
  EXPECT_TRUE(ChooseValidationGpu(CapsWithGpu(12, 1), farm::v1::ArchManifest()).has_value());
  EXPECT_EQ(NoGpuReason(CapsWithGpu(12, 1), RunsOn({"9.0", "12.0"})),
            "no GPU here serves the wheel: it runs on cc 9.0, 12.0, this worker has "
            "NVIDIA H100 80GB HBM3 (cc 12.1)");
  EXPECT_EQ(NoGpuReason(farm::v1::Capabilities(), RunsOn({"12.1"})),
            "this worker has no GPU; the wheel needs compute capability 12.1");
}

TEST(ValidationReportTest, ExitCodesFollowTheContract) {
  EXPECT_EQ(StateForExitCode(0), farm::v1::VALIDATION_PASSED);
  EXPECT_EQ(StateForExitCode(1), farm::v1::VALIDATION_FAILED);
  EXPECT_EQ(StateForExitCode(3), farm::v1::VALIDATION_PENDING_HARDWARE);
  EXPECT_EQ(StateForExitCode(4), farm::v1::VALIDATION_FAILED);
  EXPECT_EQ(StateForExitCode(5), farm::v1::VALIDATION_PENDING_HARDWARE);
  EXPECT_EQ(StateForExitCode(139), farm::v1::VALIDATION_FAILED);
}

TEST(ValidationReportTest, TheReportIsReadAndTheExitCodeDecides) {
  const std::string json = R"json({"schema": "farm.validation.v1", "state": "passed",
    "message": "2/2 cases passed on NVIDIA H100 80GB HBM3 (cc 9.0)",
    "gpu_name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
    "cases": [{"name": "b1_h16_n2048_d128_causal", "cosine": 0.9999, "relative_l1": 4.3e-07,
               "rmse": 3.4e-08, "tops": 20.2, "baseline_tops": 320, "passed": true},
              {"name": "b1_h2_n77_d64", "cosine": null, "relative_l1": null, "rmse": 1,
               "tops": null, "passed": false}]})json";
  farm::v1::ValidationReport r = ParseValidationReport(json, 0);
  EXPECT_EQ(r.state(), farm::v1::VALIDATION_PASSED);
  EXPECT_EQ(r.gpu_name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.compute_capability(), "9.0");
  ASSERT_EQ(r.cases_size(), 2);
  EXPECT_EQ(r.cases(0).name(), "b1_h16_n2048_d128_causal");
  EXPECT_DOUBLE_EQ(r.cases(0).tops(), 20.2);
  EXPECT_DOUBLE_EQ(r.cases(0).baseline_tops(), 320);
  EXPECT_TRUE(r.cases(0).passed());
  EXPECT_DOUBLE_EQ(r.cases(1).cosine(), 0);
  EXPECT_FALSE(r.cases(1).passed());
  // A script that claims "passed" but exits 1 has failed.
  EXPECT_EQ(ParseValidationReport(json, 1).state(), farm::v1::VALIDATION_FAILED);
  farm::v1::ValidationReport crashed = ParseValidationReport("{\"cases\": [", 139);
  EXPECT_EQ(crashed.state(), farm::v1::VALIDATION_FAILED);
  EXPECT_NE(crashed.message().find("exited with code 139 without a readable report"),
            std::string::npos)
      << crashed.message();
}

TEST(ValidationReportTest, ThroughputCarriesItsUnitAndANamedBaseline) {
  const std::string v2 = R"json({"schema": "farm.validation.v2", "message": "ok",
    "cases": [{"name": "add_n16777216", "cosine": 1, "passed": true, "throughput": 2950.5,
               "throughput_unit": "GB/s", "baseline_throughput": 3010.0,
               "baseline_name": "torch.add float16"},
              {"name": "decode", "passed": true, "throughput": 812, "throughput_unit": "tokens/s"}]})json";
  farm::v1::ValidationReport r = ParseValidationReport(v2, 0);
  ASSERT_EQ(r.cases_size(), 2);
  EXPECT_DOUBLE_EQ(r.cases(0).throughput(), 2950.5);
  EXPECT_EQ(r.cases(0).throughput_unit(), "GB/s");
  EXPECT_DOUBLE_EQ(r.cases(0).baseline_throughput(), 3010.0);
  EXPECT_EQ(r.cases(0).baseline(), "torch.add float16");
  EXPECT_DOUBLE_EQ(r.cases(0).tops(), 0);  // not an attention figure
  EXPECT_EQ(r.cases(1).throughput_unit(), "tokens/s");
  EXPECT_EQ(r.cases(1).baseline(), "");

  // A v1 report: attention TOPS become throughput in TOPS, the baseline named from the
  // report's impl and the case's dtype.
  const std::string v1 = R"json({"schema": "farm.validation.v1",
    "baseline": {"available": true, "impl": "torch SDPA", "headline_dtype": "float16"},
    "cases": [{"name": "b1", "passed": true, "tops": 718.0, "baseline_tops": 588.9,
               "baseline_dtype": "float16"},
              {"name": "b2", "passed": true, "tops": 20.5}]})json";
  r = ParseValidationReport(v1, 0);
  ASSERT_EQ(r.cases_size(), 2);
  EXPECT_DOUBLE_EQ(r.cases(0).throughput(), 718.0);
  EXPECT_EQ(r.cases(0).throughput_unit(), "TOPS");
  EXPECT_DOUBLE_EQ(r.cases(0).baseline_throughput(), 588.9);
  EXPECT_EQ(r.cases(0).baseline(), "torch SDPA float16");
  EXPECT_EQ(r.cases(1).baseline(), "");  // no baseline measured
}

TEST(ValidationReportTest, TheRecipesSpeedThresholdFailsASlowCase) {
  const std::string json = R"json({"message": "2/2 cases passed", "cases": [
    {"name": "big", "passed": true, "throughput": 700, "throughput_unit": "TOPS",
     "baseline_throughput": 580, "baseline_name": "torch SDPA float16"},
    {"name": "small", "passed": true, "throughput": 18.2, "throughput_unit": "TOPS",
     "baseline_throughput": 96, "baseline_name": "torch SDPA float16"},
    {"name": "untimed", "passed": true}]})json";
  farm::v1::ValidationReport r = ParseValidationReport(json, 0);
  ApplySpeedThreshold(0, &r);
  EXPECT_EQ(r.state(), farm::v1::VALIDATION_PASSED);
  ApplySpeedThreshold(0.1, &r);
  EXPECT_EQ(r.state(), farm::v1::VALIDATION_PASSED);  // 0.19x >= 0.1x
  ApplySpeedThreshold(1.0, &r);
  EXPECT_EQ(r.state(), farm::v1::VALIDATION_FAILED);
  EXPECT_EQ(r.message(),
            "case small ran at 0.19x torch SDPA float16 (18.2 vs 96 TOPS); the recipe asks for "
            "at least 1x");
  // A failed report stays failed with its own message.
  farm::v1::ValidationReport failed = ParseValidationReport(json, 1);
  ApplySpeedThreshold(1.0, &failed);
  EXPECT_EQ(failed.message(), "2/2 cases passed");
}

TEST(FastPathTest, AFallbackFailsNamingBothImplementations) {
  const std::string json = R"json({"message": "3/3 cases passed", "cases": [
    {"name": "fast", "passed": true, "implementation": "sageattn_qk_int8_pv_fp8_cuda_sm90",
     "fast_implementation": "sageattn_qk_int8_pv_fp8_cuda_sm90"},
    {"name": "slow", "passed": true, "implementation": "sageattn_qk_int8_pv_fp16_triton",
     "fast_implementation": "sageattn_qk_int8_pv_fp8_cuda_sm90"},
    {"name": "silent", "passed": true}]})json";
  farm::v1::ValidationReport r = ParseValidationReport(json, 0);
  ASSERT_EQ(r.cases_size(), 3);
  EXPECT_EQ(r.cases(1).implementation(), "sageattn_qk_int8_pv_fp16_triton");
  EXPECT_EQ(r.cases(1).fast_implementation(), "sageattn_qk_int8_pv_fp8_cuda_sm90");
  ApplyFastPathRequirement(false, &r);
  EXPECT_EQ(r.state(), farm::v1::VALIDATION_PASSED);  // not required: reported, not checked
  ApplyFastPathRequirement(true, &r);
  EXPECT_EQ(r.state(), farm::v1::VALIDATION_FAILED);
  EXPECT_EQ(r.message(),
            "case slow ran the fallback sageattn_qk_int8_pv_fp16_triton, not the fast "
            "sageattn_qk_int8_pv_fp8_cuda_sm90 this GPU has; the recipe requires the fast path");
  EXPECT_TRUE(r.cases(0).passed());
  EXPECT_FALSE(r.cases(1).passed());
  EXPECT_FALSE(r.cases(2).passed());  // a case that does not say cannot pass the check
  // A script that says nothing, or reports no case at all, cannot pass it either.
  farm::v1::ValidationReport silent =
      ParseValidationReport(R"({"message": "ok", "cases": [{"name": "c", "passed": true}]})", 0);
  ApplyFastPathRequirement(true, &silent);
  EXPECT_EQ(silent.state(), farm::v1::VALIDATION_FAILED);
  EXPECT_NE(silent.message().find("case c does not say which implementation it ran"),
            std::string::npos)
      << silent.message();
  farm::v1::ValidationReport empty = ParseValidationReport(R"({"message": "ok"})", 0);
  ApplyFastPathRequirement(true, &empty);
  EXPECT_EQ(empty.state(), farm::v1::VALIDATION_FAILED);
  // A hostile report's non-string fields read as nothing said.
  farm::v1::ValidationReport odd = ParseValidationReport(
      R"({"cases": [{"name": "c", "passed": true, "implementation": 7,
          "fast_implementation": ["x"]}]})",
      0);
  ApplyFastPathRequirement(true, &odd);
  EXPECT_EQ(odd.state(), farm::v1::VALIDATION_FAILED);
  // A failed report keeps its own message.
  farm::v1::ValidationReport failed = ParseValidationReport(json, 1);
  ApplyFastPathRequirement(true, &failed);
  EXPECT_EQ(failed.message(), "3/3 cases passed");
}

// The whole path with real processes: a real venv, pip installing a real wheel, and a
// validation script standing in for a GPU kernel check (it writes the report a GPU run
// would), chosen because the caps claim a GPU the wheel serves.
class ValidateWheelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    wheel::testing::WheelSpec spec;
    spec.filename = "attn_example-1.0.0-py3-none-any.whl";
    spec.dist_info = "attn_example-1.0.0.dist-info";
    spec.metadata = "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0\n";
    spec.wheel =
        "Wheel-Version: 1.0\nGenerator: farm-test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n";
    auto path = wheel::testing::WriteWheel(dir_.path(), spec);
    ASSERT_OK(path.status());
    wheel_ = *path;
    job_.mutable_recipe()->mutable_validation()->add_import_modules("attn_example");
    job_.mutable_recipe()->mutable_validation()->set_script("check.py");
    job_.mutable_recipe()->mutable_validation()->set_min_cosine(0.99);
  }

  Result<farm::v1::ValidationReport> Run(const std::string& script) {
    job_.mutable_recipe()->mutable_validation()->set_script_content(script);
    ValidationInputs in{.job = &job_,
                        .wheels = {wheel_},
                        .manifest = RunsOn({"9.0"}),
                        .python = "/usr/bin/python3",
                        .dir = dir_.path() + "/validate",
                        .build_dir = dir_.path(),
                        .env = {{"PATH", "/usr/bin:/bin"}},
                        .caps = CapsWithGpu(9, 0),
                        .worker_id = "w-1",
                        .timeout_ms = 60000};
    in.env["HOME"] = dir_.path();
    StepRunner steps(runner_, in.env, &control_, nullptr);
    return ValidateWheels(
        steps, runner_, &control_, [this](OutputStream, const std::string& l) { log_ += l + "\n"; },
        in);
  }

  farm::testing::ScopedTempDir dir_;
  RealProcessRunner runner_;
  JobControl control_;
  farm::v1::JobAssignment job_;
  std::string wheel_;
  std::string log_;
};

TEST_F(ValidateWheelsTest, TheScriptRunsOnTheChosenGpuWithTheContractFlags) {
  auto report = Run(
      "import json, sys, attn_example\n"
      "args = sys.argv[1:]\n"
      "print('args', ' '.join(args))\n"
      "out = args[args.index('--report') + 1]\n"
      "json.dump({'message': '1/1 cases passed', 'compute_capability': '9.0',\n"
      "           'cases': [{'name': 'c1', 'cosine': 0.999, 'passed': True}]}, open(out, 'w'))\n");
  ASSERT_OK(report.status());
  EXPECT_EQ(report->state(), farm::v1::VALIDATION_PASSED) << report->message() << log_;
  EXPECT_EQ(report->message(), "1/1 cases passed");
  EXPECT_EQ(report->worker_id(), "w-1");
  EXPECT_EQ(report->gpu_name(), "NVIDIA H100 80GB HBM3");  // from the probe when unsaid
  ASSERT_EQ(report->cases_size(), 1);
  EXPECT_NE(log_.find("args --device cuda:0 --report "), std::string::npos) << log_;
  EXPECT_NE(log_.find("--min-cosine 0.99"), std::string::npos) << log_;
}

TEST_F(ValidateWheelsTest, AScriptThatFindsNoDeviceLeavesTheWheelPending) {
  auto report = Run("raise SystemExit(3)\n");
  ASSERT_OK(report.status());
  EXPECT_EQ(report->state(), farm::v1::VALIDATION_PENDING_HARDWARE) << report->message();
}

TEST_F(ValidateWheelsTest, AFailedImportFailsBeforeTheScript) {
  job_.mutable_recipe()->mutable_validation()->add_import_modules("not_in_the_wheel");
  auto report = Run("open('ran', 'w').write('the script ran')\n");
  ASSERT_OK(report.status());
  EXPECT_EQ(report->state(), farm::v1::VALIDATION_FAILED);
  EXPECT_NE(report->message().find("import not_in_the_wheel failed in a clean venv"),
            std::string::npos)
      << report->message();
  EXPECT_FALSE(fs::Exists(dir_.path() + "/validate/ran"));
}

}  // namespace
}  // namespace farm::agent
