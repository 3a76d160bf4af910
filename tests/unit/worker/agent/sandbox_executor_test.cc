#include "worker/agent/sandbox_executor.h"

#include <algorithm>
#include <fstream>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

bool HasSequence(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end();
}

ExecRequest Build() {
  ExecRequest r;
  r.argv = {"bash", "-c", "make -C /w/job-1-a1-x/src"};
  r.cwd = "/w/job-1-a1-x/src";
  r.workspace = "/w/job-1-a1-x";
  r.env = {{"PATH", "/w/job-1-a1-x/venv/bin:/usr/bin"}, {"HOME", "/root"},
           {"OTHER", "/w/job-1-a1-xy/keep"}};
  r.mounts = {{"/cache/recipes/r", false}, {"/tools", true}};
  r.host_read_paths = {"/usr/local/cuda", "/srv/pythons/3.11"};
  return r;
}

TEST(SandboxExecutorTest, WorkspaceAtItsPathAndAtTheFixedRoot) {
  auto argv = SandboxCommand(SandboxOptions{}, Build());
  EXPECT_TRUE(HasSequence(argv, {"--bind", "/w/job-1-a1-x", "/w/job-1-a1-x"}));
  EXPECT_TRUE(HasSequence(argv, {"--bind", "/w/job-1-a1-x", kSandboxJobRoot}));
  EXPECT_TRUE(HasSequence(argv, {"--chdir", "/farm/job/src"}));
  EXPECT_TRUE(HasSequence(argv, {"--", "bash", "-c", "make -C /farm/job/src"}));
  // The recipe's cache namespace writable, the wrappers read-only; the interpreter outside
  // the system directories read-only, the toolkit under /usr already is.
  EXPECT_TRUE(HasSequence(argv, {"--bind-try", "/cache/recipes/r", "/cache/recipes/r"}));
  EXPECT_TRUE(HasSequence(argv, {"--ro-bind-try", "/tools", "/tools"}));
  EXPECT_TRUE(HasSequence(argv, {"--ro-bind-try", "/srv/pythons/3.11",
                                 "/srv/pythons/3.11"}));
  EXPECT_FALSE(HasSequence(argv, {"--ro-bind-try", "/usr/local/cuda", "/usr/local/cuda"}));
  EXPECT_TRUE(HasSequence(argv, {"--unshare-pid"}));
  EXPECT_TRUE(HasSequence(argv, {"--die-with-parent"}));
  // Nothing of the environment is on the command line, where other users could read it.
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--setenv"), argv.end());
  auto env = SandboxEnv(Build());
  EXPECT_EQ(env["PATH"], "/farm/job/venv/bin:/usr/bin");
  EXPECT_EQ(env["HOME"], "/tmp");
  EXPECT_EQ(env["OTHER"], "/w/job-1-a1-xy/keep");  // a longer name is another directory
}

TEST(SandboxExecutorTest, NetworkOnlyWhenTheRecipeAsksAndNeverOffline) {
  ExecRequest r = Build();
  auto net = [](const ExecRequest& req) {
    auto a = SandboxCommand(SandboxOptions{}, req);
    return std::find(a.begin(), a.end(), "--unshare-net") == a.end();
  };
  EXPECT_FALSE(net(r));
  r.network = true;
  EXPECT_TRUE(net(r));
  r.offline = true;
  EXPECT_FALSE(net(r));
}

TEST(SandboxExecutorTest, FarmConfigurationIsMaskedAndGpusPassedIn) {
  SandboxOptions o;
  o.etc_hidden = {"/etc/farm-worker"};
  o.devices = {"/dev/nvidia0", "/dev/nvidiactl"};
  auto argv = SandboxCommand(o, Build());
  EXPECT_TRUE(HasSequence(argv, {"--tmpfs", "/etc/farm-worker"}));
  EXPECT_TRUE(HasSequence(argv, {"--dev-bind-try", "/dev/nvidiactl", "/dev/nvidiactl"}));
}

TEST(SandboxExecutorTest, PythonReadPathsFollowVenvsToTheirBase) {
  farm::testing::ScopedTempDir dir;
  ASSERT_OK(fs::MakeDirs(dir.path() + "/base/bin"));
  ASSERT_OK(fs::MakeDirs(dir.path() + "/venv/bin"));
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/base/bin/python3", ""));
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/venv/bin/python", ""));
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/venv/pyvenv.cfg",
                                "home = " + dir.path() + "/base/bin\ninclude-system-site-packages = true\n"));
  auto paths = PythonReadPaths(dir.path() + "/venv/bin/python");
  EXPECT_NE(std::find(paths.begin(), paths.end(), dir.path() + "/venv"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), dir.path() + "/base"), paths.end());
  EXPECT_TRUE(PythonReadPaths("").empty());
}

TEST(SandboxExecutorTest, RunsACommandInTheSandboxWhenBwrapWorks) {
  RealProcessRunner runner;
  SandboxOptions o = DetectSandboxOptions("bwrap");
  if (Status works = CheckSandbox(runner, o); !works.ok()) {
    GTEST_SKIP() << "no bubblewrap sandbox on this host: " << works.message();
  }
  farm::testing::ScopedTempDir ws;
  SandboxExecutor executor(runner, o);
  ExecRequest r;
  r.argv = {"sh", "-c", "pwd; echo made > out; ls /root 2>&1 || true"};
  r.workspace = ws.path();
  r.cwd = ws.path();
  r.env = {{"PATH", "/usr/bin:/bin"}};
  auto process = executor.Start(r);
  ASSERT_OK(process.status());
  std::string out;
  ProcessResult result = (*process)->Wait([&out](OutputStream, const std::string& line) {
    out += line + "\n";
  }, 30'000);
  EXPECT_EQ(result.exit_code, 0) << out;
  EXPECT_NE(out.find("/farm/job\n"), std::string::npos) << out;
  EXPECT_NE(out.find("No such file"), std::string::npos) << out;  // no /root inside
  auto made = fs::ReadFile(ws.path() + "/out");
  ASSERT_OK(made.status());
  EXPECT_EQ(made.value(), "made\n");
}

}  // namespace
}  // namespace farm::agent
