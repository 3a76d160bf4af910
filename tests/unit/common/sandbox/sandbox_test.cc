#include "common/sandbox/sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::sandbox {
namespace {

// Where `seq` starts in `argv`; argv.size() when it is not there.
size_t IndexOf(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) - argv.begin();
}

bool HasSequence(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return IndexOf(argv, seq) < argv.size();
}

// Runs `script` with sh in `ws` in a sandbox of `options`; returns its output (it must exit 0).
std::string RunIn(const Options& options, const std::string& ws, const std::string& script,
                  std::vector<std::string> read_only = {}) {
  Request r;
  r.argv = {"sh", "-c", script};
  r.workspace = ws;
  r.cwd = ws;
  r.env = {{"PATH", "/usr/bin:/bin"}};
  r.read_only_in_workspace = std::move(read_only);
  ProcessSpec spec;
  spec.argv = Command(options, r);
  spec.env = Env(r);
  spec.clear_env = true;
  RealProcessRunner runner;
  auto out = RunAndCapture(runner, spec, 30'000);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return "";
  EXPECT_EQ(out->result.exit_code, 0) << out->out << out->err;
  return out->out + out->err;
}

Request Build() {
  Request r;
  r.argv = {"bash", "-c", "make -C /w/job-1-a1-x/src"};
  r.cwd = "/w/job-1-a1-x/src";
  r.workspace = "/w/job-1-a1-x";
  r.env = {{"PATH", "/w/job-1-a1-x/venv/bin:/usr/bin"},
           {"HOME", "/root"},
           {"OTHER", "/w/job-1-a1-xy/keep"}};
  r.mounts = {{"/cache/recipes/r", false}, {"/tools", true}};
  r.read_only_in_workspace = {"/w/job-1-a1-x/venv"};
  r.host_read_paths = {"/usr/local/cuda", "/srv/pythons/3.11"};
  return r;
}

TEST(SandboxTest, WorkspaceAtItsPathAndAtTheFixedRoot) {
  auto argv = Command(Options{}, Build());
  EXPECT_TRUE(HasSequence(argv, {"--bind", "/w/job-1-a1-x", "/w/job-1-a1-x"}));
  EXPECT_TRUE(HasSequence(argv, {"--bind", "/w/job-1-a1-x", kJobRoot}));
  EXPECT_TRUE(HasSequence(argv, {"--chdir", "/farm/job/src"}));
  // The environment read-only by both names, over the workspace's binds.
  EXPECT_TRUE(HasSequence(argv, {"--ro-bind", "/w/job-1-a1-x/venv", "/w/job-1-a1-x/venv"}));
  EXPECT_TRUE(HasSequence(argv, {"--ro-bind", "/w/job-1-a1-x/venv", "/farm/job/venv"}));
  EXPECT_LT(IndexOf(argv, {"--bind", "/w/job-1-a1-x", kJobRoot}),
            IndexOf(argv, {"--ro-bind", "/w/job-1-a1-x/venv", "/farm/job/venv"}));
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
  auto env = Env(Build());
  EXPECT_EQ(env["PATH"], "/farm/job/venv/bin:/usr/bin");
  EXPECT_EQ(env["HOME"], "/tmp");
  EXPECT_EQ(env["OTHER"], "/w/job-1-a1-xy/keep");  // a longer name is another directory
}

TEST(SandboxTest, NetworkOnlyWhenAskedFor) {
  Request r = Build();
  auto net = [](const Request& req) {
    auto a = Command(Options{}, req);
    return std::find(a.begin(), a.end(), "--unshare-net") == a.end();
  };
  EXPECT_FALSE(net(r));
  r.network = true;
  EXPECT_TRUE(net(r));
}

TEST(SandboxTest, FarmConfigurationIsMaskedAndGpusPassedIn) {
  Options o;
  o.etc_hidden = {"/etc/farm-worker"};
  o.devices = {"/dev/nvidia0", "/dev/nvidiactl"};
  auto argv = Command(o, Build());
  EXPECT_TRUE(HasSequence(argv, {"--tmpfs", "/etc/farm-worker"}));
  EXPECT_TRUE(HasSequence(argv, {"--dev-bind-try", "/dev/nvidiactl", "/dev/nvidiactl"}));
}

TEST(SandboxTest, ARootWorkersCommandsRunAsTheBuildUser) {
  Options o;
  o.build_user = BuildUser{.switches = true, .uid = 65534, .gid = 65533, .name = "nobody"};
  auto argv = Command(o, Build());
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
      argv, {"--perms", "0755", "--dir", "/farm", "--bind", "/w/job-1-a1-x", kJobRoot}));
  EXPECT_TRUE(HasSequence(argv, {"--perms", "0755", "--dir", "/srv", "--perms", "0755", "--dir",
                                 "/srv/pythons", "--ro-bind-try", "/srv/pythons/3.11"}));
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "/tmp"), 1);  // only its tmpfs
  // Without a switch: no capability kept, no setpriv.
  auto plain = Command(Options{}, Build());
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--cap-add"), plain.end());
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "setpriv"), plain.end());
}

TEST(SandboxTest, PythonReadPathsFollowVenvsToTheirBase) {
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

TEST(SandboxTest, RunsACommandInTheSandboxWhenBwrapWorks) {
  RealProcessRunner runner;
  Options o = Detect("bwrap");
  if (Status works = Check(runner, o); !works.ok()) {
    GTEST_SKIP() << "no bubblewrap sandbox on this host: " << works.message();
  }
  farm::testing::ScopedTempDir ws;
  std::string out = RunIn(o, ws.path(), "pwd; echo made > out; ls /root 2>&1 || true");
  EXPECT_NE(out.find("/farm/job\n"), std::string::npos) << out;
  EXPECT_NE(out.find("No such file"), std::string::npos) << out;  // no /root inside
  auto made = fs::ReadFile(ws.path() + "/out");
  ASSERT_OK(made.status());
  EXPECT_EQ(made.value(), "made\n");
}

TEST(SandboxTest, UnderARootWorkerTheCommandIsNotRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "the worker is not root here: builds run as it";
  RealProcessRunner runner;
  Options o = Detect("bwrap");
  auto user = ResolveBuildUser("auto", 0);
  ASSERT_OK(user.status());
  o.build_user = *user;
  if (Status works = Check(runner, o); !works.ok()) {
    GTEST_SKIP() << "no bubblewrap sandbox on this host: " << works.message();
  }
  farm::testing::ScopedTempDir ws;
  ASSERT_OK(GiveToBuildUser(*user, ws.path(), true));
  std::string out = RunIn(o, ws.path(),
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

TEST(SandboxTest, AReadOnlyEnvironmentCannotBeChangedEvenByRoot) {
  RealProcessRunner runner;
  Options o = Detect("bwrap");
  if (Status works = Check(runner, o); !works.ok()) {
    GTEST_SKIP() << "no bubblewrap sandbox on this host: " << works.message();
  }
  farm::testing::ScopedTempDir ws;
  ASSERT_OK(fs::MakeDirs(ws.path() + "/venv/lib"));
  ASSERT_OK(fs::WriteFileAtomic(ws.path() + "/venv/lib/torch.py", "clean\n", 0644));
  std::string out =
      RunIn(o, ws.path(),
            "echo BACKDOOR >> venv/lib/torch.py 2>&1; echo BACKDOOR >> /farm/job/venv/lib/torch.py "
            "2>&1; touch venv/new 2>&1; echo > ok",
            {ws.path() + "/venv"});
  EXPECT_EQ(fs::ReadFile(ws.path() + "/venv/lib/torch.py").value(), "clean\n") << out;
  EXPECT_FALSE(fs::Exists(ws.path() + "/venv/new"));
  EXPECT_TRUE(fs::Exists(ws.path() + "/ok"));  // the rest of the workspace stays writable
}

TEST(ConfinementTest, NeverRunsAsRoot) {
  RealProcessRunner runner;
  BuildUser user;
  if (::geteuid() == 0) {
    auto resolved = ResolveBuildUser("auto", 0);
    ASSERT_OK(resolved.status());
    user = *resolved;
  }
  Confinement c = Confinement::Detect(runner, user);
  farm::testing::ScopedTempDir dir;
  ASSERT_OK(GiveToBuildUser(user, dir.path(), true));
  ProcessSpec spec;
  spec.argv = {"sh", "-c",
               "id -u; echo written > " + dir.path() +
                   "/out; cat /etc/shadow "
                   ">/dev/null 2>&1 && echo READ-SHADOW; true"};
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", dir.path()}};
  spec.clear_env = true;
  auto out = RunAndCapture(runner, c.Wrap(spec, {{dir.path(), false}}, false), 30'000);
  ASSERT_OK(out.status());
  ASSERT_EQ(out->result.exit_code, 0) << out->err << c.Describe();
  if (::geteuid() == 0) {
    EXPECT_EQ(out->out.rfind(std::to_string(user.uid) + "\n", 0), 0u) << out->out;
    EXPECT_EQ(out->out.find("READ-SHADOW"), std::string::npos);
    EXPECT_NE(c.kind(), Confinement::Kind::kNone) << c.Describe();
  }
  EXPECT_EQ(fs::ReadFile(dir.path() + "/out").value(), "written\n");
  // What the user wrote, taken back: root's again and closed to the user.
  ASSERT_OK(TakeBackFromBuildUser(user, dir.path()));
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

}  // namespace
}  // namespace farm::sandbox
