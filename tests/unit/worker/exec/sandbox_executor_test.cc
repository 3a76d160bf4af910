// The sandbox executor: an executor's request becomes the sandbox's, and a command started
// through it runs in the sandbox (common/sandbox has the command line's own tests).
#include "worker/exec/sandbox_executor.h"

#include <unistd.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

TEST(SandboxExecutorTest, OfflineWinsOverTheRecipesNetwork) {
  ExecRequest r;
  r.workspace = "/w/job-1";
  r.read_only_in_workspace = {"/w/job-1/venv"};
  r.mounts = {{"/cache/r", false}};
  EXPECT_FALSE(ToSandboxRequest(r).network);
  r.network = true;
  EXPECT_TRUE(ToSandboxRequest(r).network);
  r.offline = true;
  EXPECT_FALSE(ToSandboxRequest(r).network);
  sandbox::Request s = ToSandboxRequest(r);
  EXPECT_EQ(s.read_only_in_workspace, r.read_only_in_workspace);
  ASSERT_EQ(s.mounts.size(), 1u);
  EXPECT_FALSE(s.mounts[0].read_only);
}

TEST(SandboxExecutorTest, RunsACommandInTheSandboxWhenBwrapWorks) {
  RealProcessRunner runner;
  sandbox::Options o = sandbox::Detect("bwrap");
  if (Status works = sandbox::Check(runner, o); !works.ok()) {
    GTEST_SKIP() << "no bubblewrap sandbox on this host: " << works.message();
  }
  if (::geteuid() == 0) {
    auto user = sandbox::ResolveBuildUser("auto", 0);
    ASSERT_OK(user.status());
    o.build_user = *user;
  }
  farm::testing::ScopedTempDir ws;
  ASSERT_OK(sandbox::GiveToBuildUser(o.build_user, ws.path(), true));
  SandboxExecutor executor(runner, o);
  ExecRequest r;
  r.argv = {"sh", "-c", "pwd; id -u; echo made > out; ls /root 2>&1 || true"};
  r.workspace = ws.path();
  r.cwd = ws.path();
  r.env = {{"PATH", "/usr/bin:/bin"}};
  auto process = executor.Start(r);
  ASSERT_OK(process.status());
  std::string out;
  ProcessResult result = (*process)->Wait(
      [&out](OutputStream, const std::string& line) { out += line + "\n"; }, 30'000);
  EXPECT_EQ(result.exit_code, 0) << out;
  EXPECT_EQ(out.rfind("/farm/job\n", 0), 0u) << out;
  if (o.build_user.switches) {
    EXPECT_NE(out.find(std::to_string(o.build_user.uid) + "\n"), std::string::npos) << out;
  }
  EXPECT_NE(out.find("No such file"), std::string::npos) << out;  // no /root inside
  EXPECT_EQ(fs::ReadFile(ws.path() + "/out").value(), "made\n");
}

}  // namespace
}  // namespace farm::agent
