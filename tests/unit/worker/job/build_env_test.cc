#include "worker/job/build_env.h"

#include <cstdlib>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(MaxJobsTest, MemoryAndCoresBound) {
  EXPECT_EQ(ComputeMaxJobs(16, 64 * kGiB, 4), 13);    // floor(0.85 * 64 / 4) = 13
  EXPECT_EQ(ComputeMaxJobs(8, 64 * kGiB, 4), 8);      // cores bind
  EXPECT_EQ(ComputeMaxJobs(16, 20 * kGiB, 4), 4);     // floor(4.25)
  EXPECT_EQ(ComputeMaxJobs(16, 3 * kGiB, 4), 1);      // never below 1
  EXPECT_EQ(ComputeMaxJobs(16, 32 * kGiB, 0), 6);     // 0 means the default of 4 GB
  EXPECT_EQ(ComputeMaxJobs(16, 32 * kGiB, 2.5), 10);  // floor(0.85 * 32 / 2.5) = 10
  EXPECT_EQ(ComputeMaxJobs(0, 0, 4), 1);
}

TEST(MaxJobsTest, UnifiedMemoryLeavesTheGpuValidationsTheirShare) {
  // A GB10: 20 cores and 128 GB, of which the kernel shows about 119 GiB, shared with the
  // GPU. floor((0.85 * 119 - 8) / 4) = 23 slots: the 20 cores bind, the notes' MAX_JOBS=20.
  EXPECT_EQ(ComputeMaxJobs(20, 119 * kGiB, 4, 8 * kGiB), 20);
  EXPECT_EQ(ComputeMaxJobs(20, 119 * kGiB, 4, 40 * kGiB), 15);  // floor(61.15 / 4)
  EXPECT_EQ(ComputeMaxJobs(20, 119 * kGiB, 6, 8 * kGiB), 15);   // floor(93.15 / 6)
  EXPECT_EQ(ComputeMaxJobs(20, 119 * kGiB, 4, 200 * kGiB), 1);  // never below 1
}

farm::v1::Capabilities Gb10Caps() {
  farm::v1::Capabilities caps;
  caps.set_platform("linux_aarch64");
  caps.set_ram_bytes(119 * kGiB);
  farm::v1::Gpu* gpu = caps.add_gpus();
  gpu->set_cc_major(12);
  gpu->set_cc_minor(1);
  gpu->set_unified_memory(true);
  gpu->set_memory_bytes(caps.ram_bytes());
  return caps;
}

farm::v1::JobAssignment ValidatedJob(const std::string& arch_list, double gpu_gb) {
  farm::v1::JobAssignment job;
  job.mutable_cell()->set_arch_list(arch_list);
  job.mutable_recipe()->mutable_validation()->set_script("validate.py");
  job.mutable_recipe()->mutable_validation()->set_gpu_memory_gb(gpu_gb);
  return job;
}

TEST(ValidationReserveTest, OnlyAUnifiedGpuThatValidatesTheCellHoldsMemory) {
  EXPECT_DOUBLE_EQ(ValidationReserveGb(ValidatedJob("12.1a", 8), Gb10Caps()), 8);
  EXPECT_DOUBLE_EQ(ValidationReserveGb(ValidatedJob("", 12), Gb10Caps()), 12);
  // Its GPU cannot run sm_90a: no validation script runs there.
  EXPECT_DOUBLE_EQ(ValidationReserveGb(ValidatedJob("9.0a", 8), Gb10Caps()), 0);
  // No script, nothing to hold.
  farm::v1::JobAssignment imports_only = ValidatedJob("12.1a", 8);
  imports_only.mutable_recipe()->mutable_validation()->clear_script();
  EXPECT_DOUBLE_EQ(ValidationReserveGb(imports_only, Gb10Caps()), 0);
  // A GPU with its own memory takes nothing from the builds.
  farm::v1::Capabilities discrete = Gb10Caps();
  discrete.mutable_gpus(0)->set_unified_memory(false);
  EXPECT_DOUBLE_EQ(ValidationReserveGb(ValidatedJob("12.1a", 8), discrete), 0);
}

farm::v1::JobAssignment Job() {
  farm::v1::JobAssignment job;
  job.set_job_id(7);
  job.set_attempt(2);
  job.mutable_cell()->set_python("3.11");
  job.mutable_cell()->set_cuda("13.0");
  job.mutable_cell()->set_arch_list("9.0;12.1a");
  job.mutable_recipe()->set_build_command("pip wheel .");
  (*job.mutable_recipe()->mutable_env())["FOO"] = "recipe";
  (*job.mutable_recipe()->mutable_env())["BAR"] = "recipe";
  (*job.mutable_env())["BAR"] = "assignment";
  return job;
}

JobEnvInputs Inputs(const farm::v1::JobAssignment& job) {
  JobEnvInputs in;
  in.job = &job;
  in.worker_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/w"},
                   {"LANG", "C.UTF-8"},       {"FARM_ENROLL_TOKEN", "enroll-secret-123"},
                   {"AWS_SECRET", "x"},       {"SSH_AUTH_SOCK", "/tmp/agent"}};
  in.venv_dir = "/ws/venv";
  in.wheel_dir = "/ws/wheels";
  in.tmp_dir = "/ws/tmp";
  in.python_version = "3.11";
  in.toolkit.set_path("/usr/local/cuda");
  in.toolkit.set_version("13.0");
  in.cores = 16;
  in.available_memory_bytes = 64 * kGiB;
  in.secrets = {"enroll-secret-123", "worker-token-456"};
  return in;
}

TEST(BuildEnvTest, HasTheFarmVariablesAndPrecedence) {
  auto job = Job();
  EnvMap env = BuildJobEnv(Inputs(job));
  EXPECT_EQ(env["PATH"], "/ws/venv/bin:/usr/local/cuda/bin:/usr/bin:/bin");
  EXPECT_EQ(env["FARM_PYTHON"], "/ws/venv/bin/python");
  EXPECT_EQ(env["VIRTUAL_ENV"], "/ws/venv");
  EXPECT_EQ(env["FARM_WHEEL_DIR"], "/ws/wheels");
  EXPECT_EQ(env["CUDA_HOME"], "/usr/local/cuda");
  EXPECT_EQ(env["TORCH_CUDA_ARCH_LIST"], "9.0;12.1a");
  EXPECT_EQ(env["FARM_JOB_ID"], "7");
  EXPECT_EQ(env["FARM_ATTEMPT"], "2");
  EXPECT_EQ(env["FARM_PYTHON_VERSION"], "3.11");
  EXPECT_EQ(env["FARM_CUDA_VERSION"], "13.0");
  EXPECT_EQ(env["FARM_TORCH_VERSION"], "");
  EXPECT_EQ(env["MAX_JOBS"], "13");
  EXPECT_EQ(env.count("NVCC_THREADS"), 0u);
  EXPECT_EQ(env["FOO"], "recipe");
  EXPECT_EQ(env["BAR"], "assignment");
  EXPECT_EQ(env["HOME"], "/home/w");
  EXPECT_EQ(env["TMPDIR"], "/ws/tmp");
}

TEST(BuildEnvTest, ABuildGivenNoToolkitFindsNoneOnItsPath) {
  // A host toolkit's bin (an executable nvcc), a directory with a non-executable nvcc,
  // and plain directories.
  farm::testing::ScopedTempDir dir;
  const std::string cuda_bin = dir.path() + "/cuda-13.0/bin";
  const std::string not_exec = dir.path() + "/notes";
  ASSERT_OK(fs::MakeDirs(cuda_bin));
  ASSERT_OK(fs::MakeDirs(not_exec));
  ASSERT_OK(fs::WriteFileAtomic(cuda_bin + "/nvcc", "#!/bin/sh\n", 0755));
  ASSERT_OK(fs::WriteFileAtomic(not_exec + "/nvcc", "text\n", 0644));
  auto job = Job();
  JobEnvInputs in = Inputs(job);
  in.worker_env["PATH"] = "/usr/bin:" + cuda_bin + ":" + not_exec + ":/bin";
  // With a toolkit (the cell's) the PATH is kept as it is, behind the toolkit's own bin.
  EXPECT_EQ(BuildJobEnv(in)["PATH"], "/ws/venv/bin:/usr/local/cuda/bin:" + in.worker_env["PATH"]);
  // `environment.toolkit: false` (no toolkit): the host's nvcc is not on the build's PATH,
  // neither from the worker's PATH nor from the recipe's.
  in.toolkit.Clear();
  EnvMap env = BuildJobEnv(in);
  EXPECT_EQ(env["PATH"], "/ws/venv/bin:/usr/bin:" + not_exec + ":/bin");
  EXPECT_EQ(env.count("CUDA_HOME"), 0u);
  (*job.mutable_recipe()->mutable_env())["PATH"] = cuda_bin + ":/opt/tools";
  EXPECT_EQ(BuildJobEnv(in)["PATH"], "/ws/venv/bin:/opt/tools");
  std::vector<std::string> dropped;
  EXPECT_EQ(PathWithoutToolkits(cuda_bin + ":" + cuda_bin, &dropped), "");
  EXPECT_EQ(dropped, (std::vector<std::string>{cuda_bin, cuda_bin}));
}

TEST(BuildEnvTest, NoSecretAndNoUnlistedWorkerVariable) {
  auto job = Job();
  // A recipe that tries to smuggle a token in through its env is dropped too.
  (*job.mutable_env())["LEAK"] = "prefix-worker-token-456";
  EnvMap env = BuildJobEnv(Inputs(job));
  for (const auto& [k, v] : env) {
    EXPECT_EQ(v.find("enroll-secret-123"), std::string::npos) << k;
    EXPECT_EQ(v.find("worker-token-456"), std::string::npos) << k;
  }
  EXPECT_EQ(env.count("FARM_ENROLL_TOKEN"), 0u);
  EXPECT_EQ(env.count("AWS_SECRET"), 0u);
  EXPECT_EQ(env.count("SSH_AUTH_SOCK"), 0u);
  EXPECT_EQ(env.count("LEAK"), 0u);
}

TEST(BuildEnvTest, RecipeMaxJobsWinsAndNvccThreadsSplitsTheSlots) {
  auto job = Job();
  (*job.mutable_recipe()->mutable_env())["MAX_JOBS"] = "3";
  EXPECT_EQ(BuildJobEnv(Inputs(job))["MAX_JOBS"], "3");

  auto nvcc = Job();
  nvcc.mutable_recipe()->set_build_command("NVCC_APPEND_FLAGS=--threads=$NVCC_THREADS pip wheel .");
  EnvMap env = BuildJobEnv(Inputs(nvcc));
  EXPECT_EQ(env["NVCC_THREADS"], "4");
  EXPECT_EQ(env["MAX_JOBS"], "3");  // 13 slots / 4 threads
}

TEST(BuildEnvTest, UnifiedMemoryReservationLowersMaxJobs) {
  auto job = Job();
  JobEnvInputs in = Inputs(job);
  in.reserved_bytes = 40 * kGiB;
  EXPECT_EQ(BuildJobEnv(in)["MAX_JOBS"], "3");  // floor((0.85 * 64 - 40) / 4)
}

TEST(BuildEnvTest, TritonPtxasFromTheChosenToolkitForSm121) {
  auto job = Job();  // 9.0;12.1a
  EXPECT_EQ(BuildJobEnv(Inputs(job))["TRITON_PTXAS_PATH"], "/usr/local/cuda/bin/ptxas");
  job.mutable_cell()->set_arch_list("12.1");
  EXPECT_EQ(BuildJobEnv(Inputs(job))["TRITON_PTXAS_PATH"], "/usr/local/cuda/bin/ptxas");
  job.mutable_cell()->set_arch_list("9.0;12.0a");
  EXPECT_EQ(BuildJobEnv(Inputs(job)).count("TRITON_PTXAS_PATH"), 0u);
  job.mutable_cell()->set_arch_list("12.1a");
  (*job.mutable_recipe()->mutable_env())["TRITON_PTXAS_PATH"] = "/opt/ptxas";
  EXPECT_EQ(BuildJobEnv(Inputs(job))["TRITON_PTXAS_PATH"], "/opt/ptxas");
  EXPECT_TRUE(TargetsSm121(job.cell()));
}

TEST(BuildEnvTest, Wsl2CarriesTheDriverPathsAndTheAllocatorSetting) {
  auto job = Job();
  JobEnvInputs in = Inputs(job);
  EnvMap plain = BuildJobEnv(in);
  EXPECT_EQ(plain.count("LD_LIBRARY_PATH"), 0u);
  EXPECT_EQ(plain.count("PYTORCH_CUDA_ALLOC_CONF"), 0u);
  in.wsl2 = true;
  EnvMap env = BuildJobEnv(in);
  EXPECT_EQ(env["CUDA_HOME"], "/usr/local/cuda");
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "/usr/lib/wsl/lib:/usr/local/cuda/lib64");
  EXPECT_EQ(env["LIBRARY_PATH"], "/usr/lib/wsl/lib");
  EXPECT_EQ(env["PYTORCH_CUDA_ALLOC_CONF"],
            "backend:native,max_split_size_mb:128,expandable_segments:true");
  // A recipe's own values win; its library path keeps its entries after the driver's.
  (*job.mutable_recipe()->mutable_env())["PYTORCH_CUDA_ALLOC_CONF"] = "backend:native";
  (*job.mutable_recipe()->mutable_env())["LD_LIBRARY_PATH"] = "/opt/lib";
  env = BuildJobEnv(in);
  EXPECT_EQ(env["PYTORCH_CUDA_ALLOC_CONF"], "backend:native");
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "/usr/lib/wsl/lib:/usr/local/cuda/lib64:/opt/lib");
}

TEST(SelectTest, PythonAndToolkit) {
  farm::v1::Capabilities caps;
  auto* a = caps.add_pythons();
  a->set_path("/usr/bin/python3");
  a->set_version("3.11");
  auto* b = caps.add_pythons();
  b->set_path("/opt/py312/bin/python3");
  b->set_version("3.12");
  b->set_torch_version("2.8.0+cu128");
  farm::v1::MatrixCell cell;
  cell.set_python("3.11");
  EXPECT_EQ(SelectPython(cell, caps)->path(), "/usr/bin/python3");
  cell.set_python("3.12");
  cell.set_torch("2.8");
  EXPECT_EQ(SelectPython(cell, caps)->path(), "/opt/py312/bin/python3");
  cell.set_python("3.13");
  auto missing = SelectPython(cell, caps);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no Python 3.13"), std::string::npos);
  EXPECT_NE(missing.status().message().find("3.11 (/usr/bin/python3)"), std::string::npos);

  auto* tk = caps.add_toolkits();
  tk->set_path("/usr/local/cuda-13.0");
  tk->set_version("13.0");
  cell.set_cuda("13.0");
  EXPECT_EQ(SelectToolkit(cell, caps)->path(), "/usr/local/cuda-13.0");
  cell.set_cuda("12.8");
  EXPECT_FALSE(SelectToolkit(cell, caps).ok());
  cell.set_cuda("");
  EXPECT_EQ(SelectToolkit(cell, caps)->version(), "13.0");
}

TEST(ReproducibleEnvTest, SourceDateEpochHashSeedAndNvccObjtemp) {
  auto job = Job();
  JobEnvInputs in = Inputs(job);
  in.source_date_epoch = 1'700'000'000;
  EnvMap env = BuildJobEnv(in);
  EXPECT_EQ(env["SOURCE_DATE_EPOCH"], "1700000000");
  EXPECT_EQ(env["PYTHONHASHSEED"], "0");
  EXPECT_EQ(env["NVCC_APPEND_FLAGS"], "-objtemp");
  // A recipe's own values win; its nvcc flags keep theirs and gain -objtemp once.
  (*job.mutable_recipe()->mutable_env())["SOURCE_DATE_EPOCH"] = "1";
  (*job.mutable_recipe()->mutable_env())["NVCC_APPEND_FLAGS"] = "-lineinfo";
  env = BuildJobEnv(in);
  EXPECT_EQ(env["SOURCE_DATE_EPOCH"], "1");
  EXPECT_EQ(env["NVCC_APPEND_FLAGS"], "-lineinfo -objtemp");
  (*job.mutable_recipe()->mutable_env())["NVCC_APPEND_FLAGS"] = "--objdir-as-tempdir";
  EXPECT_EQ(BuildJobEnv(in)["NVCC_APPEND_FLAGS"], "--objdir-as-tempdir");
}

TEST(FatbinCompressionEnvTest, NvccGetsTheModeWhereTheToolkitHasIt) {
  auto job = Job();
  job.mutable_recipe()->set_fatbin_compression("size");
  JobEnvInputs in = Inputs(job);
  EXPECT_EQ(BuildJobEnv(in)["NVCC_APPEND_FLAGS"], "-objtemp --compress-mode=size");
  EXPECT_EQ(FatbinCompressionNote(job.recipe(), in.toolkit),
            "device code compressed by nvcc (NVCC_APPEND_FLAGS --compress-mode=size)");
  // A mode the recipe's own flags name wins.
  (*job.mutable_recipe()->mutable_env())["NVCC_APPEND_FLAGS"] = "--compress-mode=speed";
  EXPECT_EQ(BuildJobEnv(in)["NVCC_APPEND_FLAGS"], "--compress-mode=speed -objtemp");
  job.mutable_recipe()->mutable_env()->erase("NVCC_APPEND_FLAGS");
  // CUDA 12.6's nvcc has no such flag: it keeps its default, and the log says so.
  in.toolkit.set_version("12.6");
  EXPECT_EQ(BuildJobEnv(in)["NVCC_APPEND_FLAGS"], "-objtemp");
  EXPECT_EQ(FatbinCompressionNote(job.recipe(), in.toolkit),
            "fatbin_compression: size needs CUDA 12.8 or later; CUDA 12.6 keeps nvcc's default "
            "compression");
  job.mutable_recipe()->clear_fatbin_compression();
  EXPECT_EQ(FatbinCompressionNote(job.recipe(), in.toolkit), "");
}

TEST(ReproducibleEnvTest, SourceDateEpochFromGitOrNewestFile) {
  farm::testing::ScopedTempDir dir;
  RealProcessRunner runner;
  EXPECT_EQ(SourceDateEpoch(runner, dir.path()), 0);
  const std::string a = dir.path() + "/a.txt", b = dir.path() + "/sub/b.txt";
  ASSERT_EQ(std::system(("mkdir -p " + dir.path() + "/sub && touch -d @1600000000 " + a +
                         " && echo x > " + b + " && touch -d @1650000000 " + b)
                            .c_str()),
            0);
  EXPECT_EQ(SourceDateEpoch(runner, dir.path()), 1'650'000'000);
  // A git checkout answers with its commit time, whatever the files' times.
  ASSERT_EQ(std::system(("cd " + dir.path() +
                         " && git init -q && git add -A && "
                         "GIT_COMMITTER_DATE=@1690000000 git -c user.name=t -c user.email=t@t "
                         "commit -qm x")
                            .c_str()),
            0);
  EXPECT_EQ(SourceDateEpoch(runner, dir.path()), 1'690'000'000);
}

}  // namespace
}  // namespace farm::agent
