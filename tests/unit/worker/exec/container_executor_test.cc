// ContainerExecutor: the engine command line it plans (network, env, limits, GPUs, user),
// and, with a shell script standing in for podman, that output streams, that Kill() stops
// the container by name and that Wait() always removes it; the validation steps' engine
// command lines (offline, GPUs, mounts, the job's env without secrets).
#include "worker/exec/container_executor.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/fs.h"
#include "gtest/gtest.h"
#include "tests/support/test_util.h"
#include "worker/exec/executor_runner.h"
#include "worker/job/build_env.h"

namespace farm::agent {
namespace {

using ::farm::testing::ScopedTempDir;

#define CE_CAT_(a, b) a##b
#define CE_CAT(a, b) CE_CAT_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) ASSERT_OK_AND_ASSIGN_IMPL(CE_CAT(r_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)   \
  auto tmp = (expr);                                \
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString(); \
  lhs = std::move(tmp.value())

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The value right after `flag` (first occurrence), or "".
std::string After(const std::vector<std::string>& v, const std::string& flag) {
  auto it = std::find(v.begin(), v.end(), flag);
  return it == v.end() || it + 1 == v.end() ? "" : *(it + 1);
}

std::vector<std::string> EnvFlags(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    if (v[i] == "--env") out.push_back(v[i + 1]);
  }
  return out;
}

ContainerHost FakeHost(bool gpu, uint32_t euid, int64_t memory) {
  ContainerHost h;
  h.available_memory_bytes = [memory] { return memory; };
  h.path_exists = [gpu](const std::string& p) { return gpu && p == "/dev/nvidiactl"; };
  h.euid = [euid] { return euid; };
  h.chown_tree = [](const std::string&, uint32_t, uint32_t) { return Status::Ok(); };
  return h;
}

ExecRequest Request() {
  ExecRequest r;
  r.argv = {"bash", "-eo", "pipefail", "-c", "make"};
  r.workspace = "/srv/farm/ws/job-7-a2-abc";
  r.cwd = r.workspace + "/src";
  r.env = {{"PATH", "/ws/venv/bin:/usr/bin"},
           {"MAX_JOBS", "6"},
           {"FARM_JOB_ID", "7"},
           {"FARM_ATTEMPT", "2"},
           {"HOME", "/root"},
           {"TORCH_CUDA_ARCH_LIST", "9.0;12.0a"}};
  return r;
}

TEST(ContainerExecutorPlan, BuildsOfflineWithTheJobEnvOnlyAndLimits) {
  RealProcessRunner runner;
  ContainerOptions o;
  o.engine_args = {"--runtime", "/usr/sbin/runc"};
  o.run_args = {"--ulimit", "nofile=1024:1024"};
  o.default_image = "builder:local";
  o.max_jobs = 2;
  ContainerExecutor ex(runner, o, FakeHost(false, 0, int64_t{16} << 30));
  ASSERT_OK_AND_ASSIGN(ContainerPlan plan, ex.Plan(Request(), "s1"));
  const auto& a = plan.argv;
  EXPECT_EQ(a[0], "podman");
  EXPECT_EQ(a[1], "--runtime");  // engine flags come before `run`
  EXPECT_EQ(a[3], "run");
  EXPECT_EQ(plan.name, "farm-job-7-a2-s1");
  EXPECT_EQ(After(a, "--name"), "farm-job-7-a2-s1");
  EXPECT_TRUE(Has(a, "--network=none"));
  EXPECT_TRUE(Has(a, "--rm"));
  EXPECT_EQ(After(a, "--cpus"), "6");
  EXPECT_EQ(After(a, "--memory"), "8192m");  // 16 GiB shared by two jobs
  EXPECT_EQ(After(a, "-v"), "/srv/farm/ws/job-7-a2-abc:/srv/farm/ws/job-7-a2-abc:rw");
  EXPECT_EQ(After(a, "-w"), "/srv/farm/ws/job-7-a2-abc/src");
  EXPECT_EQ(After(a, "--ulimit"), "nofile=1024:1024");
  EXPECT_FALSE(Has(a, "--device"));
  EXPECT_FALSE(Has(a, "--gpus"));
  // A root worker runs the build as the image's unprivileged user and hands it the workspace.
  EXPECT_EQ(After(a, "--user"), "1000:1000");
  EXPECT_EQ(plan.chown_user, "1000:1000");
  auto env = EnvFlags(a);
  EXPECT_EQ(env.size(), 5u);
  EXPECT_TRUE(Has(env, "MAX_JOBS=6"));
  EXPECT_TRUE(Has(env, "TORCH_CUDA_ARCH_LIST=9.0;12.0a"));
  EXPECT_FALSE(Has(env, "HOME=/root"));  // the host's home means nothing in the image
  // The image, then the command, end the line.
  ASSERT_GE(a.size(), 6u);
  EXPECT_EQ(a[a.size() - 6], "builder:local");
  EXPECT_EQ(a.back(), "make");
}

TEST(ContainerExecutorPlan, RecipeImageWinsAndMissingImageIsRefused) {
  RealProcessRunner runner;
  ContainerOptions o;
  o.default_image = "builder:default";
  ContainerExecutor ex(runner, o, FakeHost(false, 0, 0));
  ExecRequest r = Request();
  r.image = "builder:cu128";
  ASSERT_OK_AND_ASSIGN(ContainerPlan plan, ex.Plan(r, "x"));
  EXPECT_EQ(plan.image, "builder:cu128");
  EXPECT_FALSE(Has(plan.argv, "--memory"));  // unknown memory: no limit rather than a wrong one

  ContainerExecutor bare(runner, ContainerOptions{}, FakeHost(false, 0, 0));
  auto refused = bare.Plan(Request(), "x");
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
}

TEST(ContainerExecutorPlan, GpusArePassedOnlyWhenTheHostHasThem) {
  RealProcessRunner runner;
  ContainerOptions podman;
  podman.default_image = "i";
  ContainerExecutor with_gpu(runner, podman, FakeHost(true, 0, 0));
  ASSERT_OK_AND_ASSIGN(auto p, with_gpu.Plan(Request(), "x"));
  EXPECT_EQ(After(p.argv, "--device"), "nvidia.com/gpu=all");

  ContainerOptions docker = podman;
  docker.engine = "/usr/bin/docker";
  ContainerExecutor docker_gpu(runner, docker, FakeHost(true, 0, 0));
  ASSERT_OK_AND_ASSIGN(auto d, docker_gpu.Plan(Request(), "x"));
  EXPECT_EQ(After(d.argv, "--gpus"), "all");
  EXPECT_EQ(docker_gpu.Name(), "docker");

  ContainerOptions off = podman;
  off.gpus = ContainerGpus::kNone;
  ContainerExecutor no_gpu(runner, off, FakeHost(true, 0, 0));
  ASSERT_OK_AND_ASSIGN(auto n, no_gpu.Plan(Request(), "x"));
  EXPECT_FALSE(Has(n.argv, "--device"));
}

TEST(ContainerExecutorPlan, NonRootPodmanKeepsTheWorkersIdentity) {
  RealProcessRunner runner;
  ContainerOptions o;
  o.default_image = "i";
  ContainerExecutor ex(runner, o, FakeHost(false, 1234, 0));
  ASSERT_OK_AND_ASSIGN(auto p, ex.Plan(Request(), "x"));
  EXPECT_TRUE(Has(p.argv, "--userns=keep-id"));
  EXPECT_FALSE(Has(p.argv, "--user"));
  EXPECT_EQ(p.chown_user, "");

  o.user = "image";
  ContainerExecutor image_user(runner, o, FakeHost(false, 0, 0));
  ASSERT_OK_AND_ASSIGN(auto q, image_user.Plan(Request(), "x"));
  EXPECT_FALSE(Has(q.argv, "--user"));
}

// A shell script playing podman: records each call, `run` prints and exits 3 (or waits
// for `stop` when the file "hang" exists), `stop` ends the run.
class FakeEngine {
 public:
  FakeEngine() {
    const std::string d = dir_.path();
    std::string script =
        "#!/bin/sh\n"
        "echo \"$*\" >> " +
        d +
        "/calls\n"
        "for a in \"$@\"; do case $a in run|stop|rm) cmd=$a; break;; esac; done\n"
        "case $cmd in\n"
        "  run) echo $$ > " +
        d +
        "/run.pid; echo out-line; echo err-line >&2\n"
        "       if [ -f " +
        d +
        "/hang ]; then sleep 30 & wait; fi; exit 3;;\n"
        "  stop) kill -TERM $(cat " +
        d +
        "/run.pid); exit 0;;\n"
        "  rm) exit 1;;\n"
        "esac\n";
    EXPECT_OK(fs::WriteFileAtomic(d + "/engine", script, 0755));
    ::chmod((d + "/engine").c_str(), 0755);
  }
  std::string engine() const { return dir_.path() + "/engine"; }
  std::string calls() const {
    auto c = fs::ReadFile(dir_.path() + "/calls");
    return c.ok() ? *c : "";
  }
  void Hang() { EXPECT_OK(fs::WriteFileAtomic(dir_.path() + "/hang", "")); }

 private:
  ScopedTempDir dir_;
};

ContainerOptions FakeOptions(const FakeEngine& engine) {
  ContainerOptions o;
  o.engine = engine.engine();
  o.default_image = "builder:local";
  o.engine_env = {{"PATH", "/usr/bin:/bin"}};
  return o;
}

TEST(ContainerExecutorPlan, CacheMountsKeepTheirPathsAndTheBuildUserGetsTheCache) {
  FakeEngine engine;
  RealProcessRunner runner;
  ContainerHost host = FakeHost(false, 0, 0);  // a root worker: builds run as 1000:1000
  std::vector<std::string> chowned;
  host.chown_tree = [&chowned](const std::string& dir, uint32_t uid, uint32_t gid) {
    chowned.push_back(dir + " " + std::to_string(uid) + ":" + std::to_string(gid));
    return Status::Ok();
  };
  ContainerExecutor ex(runner, FakeOptions(engine), host);
  ExecRequest r = Request();
  r.mounts = {{"/var/lib/farm/ccache", false}, {"/var/lib/farm/tools", true}};
  ASSERT_OK_AND_ASSIGN(ContainerPlan plan, ex.Plan(r, "s1"));
  EXPECT_TRUE(Has(plan.argv, "/var/lib/farm/ccache:/var/lib/farm/ccache:rw"));
  EXPECT_TRUE(Has(plan.argv, "/var/lib/farm/tools:/var/lib/farm/tools:ro"));
  ASSERT_OK_AND_ASSIGN(auto proc, ex.Start(r));
  proc->Wait([](OutputStream, const std::string&) {}, 20000);
  // The workspace and the writable cache, never the read-only wrappers.
  EXPECT_EQ(chowned, (std::vector<std::string>{r.workspace + " 1000:1000",
                                               "/var/lib/farm/ccache 1000:1000"}));
}

TEST(ContainerExecutorRun, StreamsOutputAndRemovesTheContainer) {
  FakeEngine engine;
  RealProcessRunner runner;
  ContainerExecutor ex(runner, FakeOptions(engine), FakeHost(false, 1234, 0));
  ASSERT_OK_AND_ASSIGN(auto proc, ex.Start(Request()));
  std::vector<std::string> lines;
  ProcessResult r =
      proc->Wait([&](OutputStream, const std::string& l) { lines.push_back(l); }, 20000);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(Has(lines, "out-line"));
  EXPECT_TRUE(Has(lines, "err-line"));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("farm: container farm-job-7-a2-", 0), 0u) << lines[0];
  std::string calls = engine.calls();
  EXPECT_NE(calls.find("run --rm --name farm-job-7-a2-"), std::string::npos) << calls;
  EXPECT_NE(calls.find("rm -f -t 0 farm-job-7-a2-"), std::string::npos) << calls;
  EXPECT_EQ(calls.find("stop"), std::string::npos) << calls;
}

TEST(ContainerExecutorRun, KillStopsTheContainerByName) {
  FakeEngine engine;
  engine.Hang();
  RealProcessRunner runner;
  ContainerExecutor ex(runner, FakeOptions(engine), FakeHost(false, 1234, 0));
  ASSERT_OK_AND_ASSIGN(auto proc, ex.Start(Request()));
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    proc->Kill(2000);
  });
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = proc->Wait(nullptr, 60000);
  killer.join();
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 10.0);
  EXPECT_NE(r.exit_code, 0);
  std::string calls = engine.calls();
  size_t stop = calls.find("stop -t 2 farm-job-7-a2-");
  size_t rm = calls.find("rm -f -t 0 farm-job-7-a2-");
  EXPECT_NE(stop, std::string::npos) << calls;
  EXPECT_NE(rm, std::string::npos) << calls;
  EXPECT_LT(stop, rm) << calls;
}

TEST(ContainerExecutorRun, EachStartGetsItsOwnName) {
  FakeEngine engine;
  RealProcessRunner runner;
  ContainerExecutor ex(runner, FakeOptions(engine), FakeHost(false, 1234, 0));
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(auto proc, ex.Start(Request()));
    proc->Wait(nullptr, 20000);
  }
  std::string calls = engine.calls();
  size_t first = calls.find("--name ");
  size_t second = calls.find("--name ", first + 1);
  ASSERT_NE(second, std::string::npos);
  EXPECT_NE(calls.substr(first, 30), calls.substr(second, 30));
}

// Records what it was asked to start; starts nothing.
class RecordingExecutor final : public Executor {
 public:
  std::string Name() const override { return "podman"; }
  ExecutorKind Kind() const override { return ExecutorKind::kContainer; }
  Result<std::unique_ptr<Process>> Start(const ExecRequest& request) override {
    requests.push_back(request);
    return Status::Unavailable("recorded only");
  }
  std::vector<ExecRequest> requests;
};

TEST(ExecutorProcessRunner, EachProcessIsOneExecutorRequestWithTheFixedParts) {
  RecordingExecutor executor;
  ExecRequest base;
  base.workspace = "/srv/farm/ws/job-7-a1-x";
  base.image = "builder:cu130";
  base.mounts = {{"/opt/wheels", true}};
  base.env = {{"FARM_JOB_ID", "7"}, {"CUDA_VISIBLE_DEVICES", "1"}};
  ExecutorProcessRunner runner(executor, base);
  ProcessSpec spec{.argv = {"/ws/validate/venv/bin/python", "-c", "import attn_example"},
                   .cwd = base.workspace + "/validate",
                   .env = {{"CUDA_VISIBLE_DEVICES", "0"}},
                   .clear_env = true,
                   .kill_grace_ms = 1234};
  EXPECT_EQ(runner.Start(spec).status().code(), StatusCode::kUnavailable);
  ASSERT_EQ(executor.requests.size(), 1u);
  const ExecRequest& r = executor.requests[0];
  EXPECT_EQ(r.argv, spec.argv);
  EXPECT_EQ(r.cwd, spec.cwd);
  EXPECT_EQ(r.env, (std::map<std::string, std::string>{{"FARM_JOB_ID", "7"},
                                                       {"CUDA_VISIBLE_DEVICES", "0"}}));
  EXPECT_EQ(r.workspace, base.workspace);
  EXPECT_EQ(r.image, "builder:cu130");
  ASSERT_EQ(r.mounts.size(), 1u);
  EXPECT_EQ(r.mounts[0].path, "/opt/wheels");
  EXPECT_EQ(r.kill_grace_ms, 1234);
  // What a container cannot honour is refused, not dropped.
  ProcessSpec with_stdin = spec;
  with_stdin.stdin_data = "y\n";
  EXPECT_EQ(runner.Start(with_stdin).status().code(), StatusCode::kInvalidArgument);
  ProcessSpec inherits = spec;
  inherits.clear_env = false;
  EXPECT_EQ(runner.Start(inherits).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(executor.requests.size(), 1u);
}

// The job's validation as job_runner builds it: the workspace, the worker's find-links
// directory outside it, the job's identity for the container's name.
ExecRequest ValidationBase() {
  ExecRequest base;
  base.workspace = "/srv/farm/ws/job-7-a1-x";
  base.image = "builder:cu130";
  base.mounts = {{"/opt/wheels", true}};
  base.env = {{"FARM_JOB_ID", "7"}, {"FARM_ATTEMPT", "1"}};
  return base;
}

// The validation script's environment: the job's, built with the worker's secrets named,
// one of which a recipe variable carries.
EnvMap ValidationEnv(farm::v1::JobAssignment& job) {
  job.set_job_id(7);
  job.set_attempt(1);
  (*job.mutable_recipe()->mutable_env())["LEAKY"] = "token=enroll-secret-123";
  (*job.mutable_recipe()->mutable_env())["RECIPE_VAR"] = "kept";
  JobEnvInputs in;
  in.job = &job;
  in.worker_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}};
  in.venv_dir = "/srv/farm/ws/job-7-a1-x/validate/venv";
  in.wheel_dir = "/srv/farm/ws/job-7-a1-x/wheels";
  in.python_version = "3.11";
  in.cores = 4;
  in.available_memory_bytes = int64_t{8} << 30;
  in.secrets = {"enroll-secret-123", "worker-token-456"};
  return BuildJobEnv(in);
}

TEST(ValidationContainer, RunsOfflineWithTheGpusTheMountsAndTheJobEnvMinusSecrets) {
  FakeEngine engine;
  RealProcessRunner host;
  ContainerOptions o = FakeOptions(engine);
  o.build_network = true;  // even where builds may use the network, validation may not
  o.gpus = ContainerGpus::kAll;
  ContainerExecutor ex(host, o, FakeHost(false, 1000, 0));
  std::unique_ptr<ProcessRunner> runner = MakeValidationRunner(ex, host, ValidationBase());
  farm::v1::JobAssignment job;
  ProcessSpec spec{.argv = {"/srv/farm/ws/job-7-a1-x/validate/venv/bin/python", "check.py"},
                   .cwd = "/srv/farm/ws/job-7-a1-x/validate",
                   .env = ValidationEnv(job),
                   .clear_env = true};
  ASSERT_OK_AND_ASSIGN(auto proc, runner->Start(spec));
  std::vector<std::string> lines;
  proc->Wait([&lines](OutputStream, const std::string& l) { lines.push_back(l); }, 20000);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("farm: container farm-job-7-a1-"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("no network"), std::string::npos) << lines[0];
  std::string run = engine.calls().substr(0, engine.calls().find('\n'));
  EXPECT_EQ(run.rfind("run --rm --name farm-job-7-a1-", 0), 0u) << run;
  EXPECT_NE(run.find("--hostname farm-job-7-a1-"), std::string::npos) << run;
  EXPECT_NE(run.find("--network=none"), std::string::npos) << run;
  EXPECT_NE(run.find("--device nvidia.com/gpu=all"), std::string::npos) << run;
  EXPECT_NE(run.find("-v /srv/farm/ws/job-7-a1-x:/srv/farm/ws/job-7-a1-x:rw"), std::string::npos);
  EXPECT_NE(run.find("-v /opt/wheels:/opt/wheels:ro"), std::string::npos) << run;
  EXPECT_NE(run.find("-w /srv/farm/ws/job-7-a1-x/validate"), std::string::npos) << run;
  EXPECT_NE(run.find("--env RECIPE_VAR=kept"), std::string::npos) << run;
  EXPECT_NE(run.find("--env VIRTUAL_ENV=/srv/farm/ws/job-7-a1-x/validate/venv"), std::string::npos);
  EXPECT_NE(run.find("--env FARM_JOB_ID=7"), std::string::npos) << run;
  EXPECT_EQ(run.find("enroll-secret"), std::string::npos) << run;
  EXPECT_EQ(run.find("LEAKY"), std::string::npos) << run;
  EXPECT_EQ(run.find("--env HOME="), std::string::npos) << run;
  EXPECT_NE(run.find("builder:cu130 /srv/farm/ws/job-7-a1-x/validate/venv/bin/python check.py"),
            std::string::npos)
      << run;
}

TEST(ValidationContainer, DockerGetsGpusAllAndAutoFollowsTheHost) {
  RealProcessRunner runner;
  ContainerOptions o;
  o.engine = "docker";
  o.build_network = true;
  ContainerExecutor with_gpu(runner, o, FakeHost(true, 0, 0));
  ExecRequest r = ValidationBase();
  r.argv = {"python", "check.py"};
  r.offline = true;
  ASSERT_OK_AND_ASSIGN(auto p, with_gpu.Plan(r, "v"));
  EXPECT_EQ(After(p.argv, "--gpus"), "all");
  EXPECT_TRUE(Has(p.argv, "--network=none"));
  EXPECT_EQ(After(p.argv, "--hostname"), "farm-job-7-a1-v");
  ContainerExecutor no_gpu(runner, o, FakeHost(false, 0, 0));
  ASSERT_OK_AND_ASSIGN(auto q, no_gpu.Plan(r, "v"));
  EXPECT_FALSE(Has(q.argv, "--gpus"));
  r.offline = false;  // a build, where the operator allows the network...
  ASSERT_OK_AND_ASSIGN(auto b, no_gpu.Plan(r, "v"));
  EXPECT_TRUE(Has(b.argv, "--network=none"));  // ...but its recipe did not ask for it
  r.network = true;
  ASSERT_OK_AND_ASSIGN(auto n, no_gpu.Plan(r, "v"));
  EXPECT_FALSE(Has(n.argv, "--network=none"));
}

TEST(ValidationContainer, NativeValidationRunsOnTheHostWithoutAnyEngine) {
  FakeEngine engine;
  RealProcessRunner host;
  NativeExecutor native(host);
  std::unique_ptr<ProcessRunner> runner = MakeValidationRunner(native, host, ValidationBase());
  ProcessSpec spec{.argv = {"sh", "-c", "echo on-host-$X"},
                   .env = {{"PATH", "/usr/bin:/bin"}, {"X", "1"}},
                   .clear_env = true};
  ASSERT_OK_AND_ASSIGN(auto proc, runner->Start(spec));
  std::string out;
  ProcessResult r = proc->Wait([&out](OutputStream, const std::string& l) { out += l; }, 20000);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(out, "on-host-1");
  EXPECT_EQ(engine.calls(), "");
}

// An engine that answers `run ... IMAGE test -x PATH` by testing PATH on this machine, or
// fails like an engine that cannot start the container when the path is /engine-fails.
std::string TestingEngine(const std::string& dir) {
  std::string script =
      "#!/bin/sh\n"
      "echo \"$*\" >> " +
      dir +
      "/calls\n"
      "for a in \"$@\"; do last=$a; done\n"
      "case \"$*\" in *' rm '*) exit 0;; esac\n"
      "[ \"$last\" = /engine-fails ] && exit 125\n"
      "[ -x \"$last\" ]\n";
  EXPECT_OK(fs::WriteFileAtomic(dir + "/engine", script, 0755));
  ::chmod((dir + "/engine").c_str(), 0755);
  return dir + "/engine";
}

TEST(HasExecutable, AsksTheImageOfflineAndTellsEngineTroubleApart) {
  ScopedTempDir dir;
  RealProcessRunner host;
  ContainerOptions o;
  o.engine = TestingEngine(dir.path());
  o.engine_env = {{"PATH", "/usr/bin:/bin"}};
  o.build_network = true;
  ContainerExecutor ex(host, o, FakeHost(false, 1000, 0));
  ASSERT_OK_AND_ASSIGN(bool sh, HasExecutable(ex, ValidationBase(), "/bin/sh"));
  EXPECT_TRUE(sh);
  ASSERT_OK_AND_ASSIGN(bool missing, HasExecutable(ex, ValidationBase(), "/no/such/ccache"));
  EXPECT_FALSE(missing);
  auto trouble = HasExecutable(ex, ValidationBase(), "/engine-fails");
  EXPECT_EQ(trouble.status().code(), StatusCode::kUnavailable);
  auto calls = fs::ReadFile(dir.path() + "/calls");
  ASSERT_OK(calls.status());
  std::string first = calls->substr(0, calls->find('\n'));
  EXPECT_NE(first.find("--network=none"), std::string::npos) << first;
  EXPECT_NE(first.find("builder:cu130 test -x /bin/sh"), std::string::npos) << first;
}

TEST(OfflineToolRunner, RefusesRemoteGitAndAllowsLocalSteps) {
  RealProcessRunner real;
  OfflineToolRunner offline(real);
  ProcessSpec clone;
  clone.argv = {"git", "clone", "--quiet", "--", "https://example.invalid/x.git", "/tmp/x"};
  EXPECT_EQ(offline.Start(clone).status().code(), StatusCode::kPermissionDenied);
  clone.argv = {"git", "clone", "--", "git@example.invalid:x.git", "/tmp/x"};
  EXPECT_EQ(offline.Start(clone).status().code(), StatusCode::kPermissionDenied);
  ProcessSpec local;
  local.argv = {"true"};
  ASSERT_OK_AND_ASSIGN(auto p, offline.Start(local));
  EXPECT_EQ(p->Wait(nullptr, 10000).exit_code, 0);
}

}  // namespace
}  // namespace farm::agent
