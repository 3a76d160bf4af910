#include "worker/exec/sandbox_executor.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

bool HasSequence(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end();
}

// Runs `script` with sh in `ws` through `executor`; returns its output (it must exit 0).
std::string RunIn(SandboxExecutor& executor, const std::string& ws, const std::string& script) {
  ExecRequest r;
  r.argv = {"sh", "-c", script};
  r.workspace = ws;
  r.cwd = ws;
  r.env = {{"PATH", "/usr/bin:/bin"}};
  auto process = executor.Start(r);
  EXPECT_TRUE(process.ok()) << process.status().ToString();
  if (!process.ok()) return "";
  std::string out;
  ProcessResult result = (*process)->Wait(
      [&out](OutputStream, const std::string& line) { out += line + "\n"; }, 30'000);
  EXPECT_EQ(result.exit_code, 0) << out;
  return out;
}

ExecRequest Build() {
  ExecRequest r;
  r.argv = {"bash", "-c", "make -C /w/job-1-a1-x/src"};
  r.cwd = "/w/job-1-a1-x/src";
  r.workspace = "/w/job-1-a1-x";
  r.env = {{"PATH", "/w/job-1-a1-x/venv/bin:/usr/bin"},
           {"HOME", "/root"},
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
  EXPECT_TRUE(HasSequence(argv, {"--ro-bind-try", "/srv/pythons/3.11", "/srv/pythons/3.11"}));
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

TEST(SandboxExecutorTest, ARootWorkersCommandsRunAsTheBuildUser) {
  SandboxOptions o;
  o.build_user = BuildUser{.switches = true, .uid = 65534, .gid = 65533, .name = "nobody"};
  auto argv = SandboxCommand(o, Build());
  EXPECT_TRUE(
      HasSequence(argv, {"--cap-drop", "ALL", "--cap-add", "CAP_DAC_READ_SEARCH", "--cap-add",
                         "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"}));
  EXPECT_TRUE(HasSequence(argv, {"--perms", "01777", "--tmpfs", "/tmp"}));
  EXPECT_TRUE(HasSequence(
      argv, {"--", "setpriv", "--reuid=65534", "--regid=65533", "--clear-groups", "--inh-caps=-all",
             "--bounding-set=-all", "--", "bash", "-c", "make -C /farm/job/src"}));
  // The directories on the way to each mount point are made reachable for the user first
  // (bwrap would make them root's 0700); /tmp and the system directories keep theirs.
  EXPECT_TRUE(HasSequence(
      argv, {"--perms", "0755", "--dir", "/w", "--bind", "/w/job-1-a1-x", "/w/job-1-a1-x"}));
  EXPECT_TRUE(HasSequence(
      argv, {"--perms", "0755", "--dir", "/farm", "--bind", "/w/job-1-a1-x", kSandboxJobRoot}));
  EXPECT_TRUE(HasSequence(argv, {"--perms", "0755", "--dir", "/srv", "--perms", "0755", "--dir",
                                 "/srv/pythons", "--ro-bind-try", "/srv/pythons/3.11"}));
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "/tmp"), 1);  // only its tmpfs
  // Without a switch: no capability kept, no setpriv.
  auto plain = SandboxCommand(SandboxOptions{}, Build());
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--cap-add"), plain.end());
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "setpriv"), plain.end());
}

TEST(SandboxExecutorTest, PythonReadPathsFollowVenvsToTheirBase) {
  farm::testing::ScopedTempDir dir;
  ASSERT_OK(fs::MakeDirs(dir.path() + "/base/bin"));
  ASSERT_OK(fs::MakeDirs(dir.path() + "/venv/bin"));
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/base/bin/python3", ""));
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/venv/bin/python", ""));
  ASSERT_OK(fs::WriteFileAtomic(
      dir.path() + "/venv/pyvenv.cfg",
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
  std::string out = RunIn(executor, ws.path(), "pwd; echo made > out; ls /root 2>&1 || true");
  EXPECT_NE(out.find("/farm/job\n"), std::string::npos) << out;
  EXPECT_NE(out.find("No such file"), std::string::npos) << out;  // no /root inside
  auto made = fs::ReadFile(ws.path() + "/out");
  ASSERT_OK(made.status());
  EXPECT_EQ(made.value(), "made\n");
}

TEST(SandboxExecutorTest, UnderARootWorkerTheCommandIsNotRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "the worker is not root here: builds run as it";
  RealProcessRunner runner;
  SandboxOptions o = DetectSandboxOptions("bwrap");
  auto user = ResolveBuildUser("auto", 0);
  ASSERT_OK(user.status());
  o.build_user = *user;
  if (Status works = CheckSandbox(runner, o); !works.ok()) {
    GTEST_SKIP() << "no bubblewrap sandbox on this host: " << works.message();
  }
  farm::testing::ScopedTempDir ws;
  ASSERT_OK(GiveToBuildUser(*user, ws.path(), true));
  SandboxExecutor executor(runner, o);
  std::string out = RunIn(executor, ws.path(),
                          "id -u; id -g; cat /etc/shadow >/dev/null 2>&1 && echo READ-SHADOW; "
                          "grep CapEff /proc/self/status; touch /tmp/t && echo tmp-ok; echo > out; "
                          "ls /farm/job >/dev/null && echo root-ok; ls " +
                              ws.path() + "/ >/dev/null && echo ws-ok");
  EXPECT_EQ(out.rfind(std::to_string(user->uid) + "\n" + std::to_string(user->gid) + "\n", 0), 0u)
      << out;
  EXPECT_EQ(out.find("READ-SHADOW"), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("tmp-ok"), std::string::npos) << out;
  // The workspace by both its names, as build commands and the compile cache name it.
  EXPECT_NE(out.find("root-ok"), std::string::npos) << out;
  EXPECT_NE(out.find("ws-ok"), std::string::npos) << out;
  EXPECT_TRUE(fs::Exists(ws.path() + "/out"));
}

}  // namespace
}  // namespace farm::agent
