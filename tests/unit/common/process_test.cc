#include "common/process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm {
namespace {

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// True when `pid` exists and is not a zombie.
bool Alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return false;
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// SIGKILL is delivered asynchronously: gives a killed pid up to `ms` to disappear.
bool GoneWithin(pid_t pid, int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    if (!Alive(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::vector<pid_t> ReadPids(const std::string& path) {
  std::ifstream f(path);
  std::vector<pid_t> pids;
  for (pid_t p; f >> p;) pids.push_back(p);
  return pids;
}

ProcessSpec Bash(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"bash", "-c", script};
  return spec;
}

TEST(ProcessTest, ReportsExitCodes) {
  RealProcessRunner runner;
  for (int code : {0, 1, 3, 42}) {
    auto r = RunAndCapture(runner, Bash("exit " + std::to_string(code)), 10000);
    ASSERT_OK(r.status());
    EXPECT_EQ(r->result.exit_code, code);
    EXPECT_EQ(r->result.term_signal, 0);
    EXPECT_FALSE(r->result.timed_out);
  }
}

TEST(ProcessTest, SignalDeathIs128PlusSignal) {
  RealProcessRunner runner;
  auto r = RunAndCapture(runner, Bash("kill -9 $$"), 10000);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->result.term_signal, 9);
  EXPECT_EQ(r->result.exit_code, 137);
}

TEST(ProcessTest, SplitsLinesPerStreamIncludingPartialLastLine) {
  RealProcessRunner runner;
  auto started = runner.Start(Bash("printf 'a\\nb\\n'; printf 'err1\\n' >&2; printf 'tail'"));
  ASSERT_OK(started.status());
  std::vector<std::pair<OutputStream, std::string>> lines;
  auto result = started.value()->Wait(
      [&](OutputStream s, const std::string& l) { lines.emplace_back(s, l); }, 10000);
  EXPECT_EQ(result.exit_code, 0);
  std::vector<std::string> out, err;
  for (const auto& [s, l] : lines) (s == OutputStream::kStdout ? out : err).push_back(l);
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b", "tail"}));
  EXPECT_EQ(err, (std::vector<std::string>{"err1"}));
}

TEST(ProcessTest, ClearEnvGivesExactlyTheGivenEnvironment) {
  ::setenv("FARM_PROCESS_TEST_SECRET", "leak-me", 1);
  RealProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.clear_env = true;
  spec.env = {{"ONLY", "this"}, {"PATH", "/usr/bin:/bin"}};
  auto r = RunAndCapture(runner, spec, 10000);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->out, "ONLY=this\nPATH=/usr/bin:/bin\n");

  spec.clear_env = false;
  auto inherited = RunAndCapture(runner, spec, 10000);
  ASSERT_OK(inherited.status());
  EXPECT_NE(inherited->out.find("FARM_PROCESS_TEST_SECRET=leak-me"), std::string::npos);
  EXPECT_NE(inherited->out.find("ONLY=this"), std::string::npos);
  ::unsetenv("FARM_PROCESS_TEST_SECRET");
}

TEST(ProcessTest, MissingProgramAndBadCwdAreErrors) {
  RealProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"farm-no-such-program-xyz"};
  auto r = runner.Start(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);

  spec.argv = {"true"};
  spec.cwd = "/nonexistent/farm/dir";
  auto bad_cwd = runner.Start(spec);
  ASSERT_FALSE(bad_cwd.ok());
  EXPECT_NE(bad_cwd.status().message().find("/nonexistent/farm/dir"), std::string::npos);
}

TEST(ProcessTest, StdinIsWrittenAndWorkingDirectoryApplied) {
  testing::ScopedTempDir dir;
  RealProcessRunner runner;
  ProcessSpec spec = Bash("cat; pwd");
  spec.stdin_data = "hello\nworld\n";
  spec.cwd = dir.path();
  auto r = RunAndCapture(runner, spec, 10000);
  ASSERT_OK(r.status());
  char real[4096];
  ASSERT_NE(::realpath(dir.path().c_str(), real), nullptr);
  EXPECT_EQ(r->out, "hello\nworld\n" + std::string(real) + "\n");
}

TEST(ProcessTest, KillStopsTheWholeTreeWithinTheGrace) {
  testing::ScopedTempDir dir;
  std::string pids = dir.path() + "/pids";
  RealProcessRunner runner;
  // The children ignore nothing, but the inner subshell traps TERM to prove the SIGKILL
  // escalation reaches what SIGTERM does not.
  auto started = runner.Start(Bash("sleep 1000 & echo $! >> " + pids +
                                   "; (trap '' TERM; sleep 1000 & echo $! >> " + pids +
                                   "; wait) & echo $! >> " + pids + "; echo up; wait"));
  ASSERT_OK(started.status());
  auto& process = *started.value();
  std::thread killer([&] {
    for (int i = 0; i < 200 && ReadPids(pids).size() < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    process.Kill(1000);
  });
  int64_t t0 = SteadyNowMs();
  ProcessResult result = process.Wait(nullptr, 0);
  killer.join();
  int64_t elapsed = SteadyNowMs() - t0;
  EXPECT_TRUE(result.killed);
  EXPECT_NE(result.exit_code, 0);
  auto children = ReadPids(pids);
  ASSERT_EQ(children.size(), 3u);
  for (pid_t p : children) EXPECT_TRUE(GoneWithin(p, 500)) << "pid " << p << " survived";
  EXPECT_LT(elapsed, 5000 + 3000);
}

TEST(ProcessTest, LeftoverBackgroundChildrenAreKilledWhenTheCommandExits) {
  testing::ScopedTempDir dir;
  std::string pids = dir.path() + "/pids";
  RealProcessRunner runner;
  auto r = RunAndCapture(runner, Bash("sleep 1000 >/dev/null 2>&1 & echo $! > " + pids), 10000);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->result.exit_code, 0);
  auto children = ReadPids(pids);
  ASSERT_EQ(children.size(), 1u);
  EXPECT_TRUE(GoneWithin(children[0], 500));
}

TEST(ProcessTest, TimeoutKillsAndIsReported) {
  RealProcessRunner runner;
  ProcessSpec spec = Bash("echo begin; sleep 1000");
  spec.kill_grace_ms = 500;
  int64_t t0 = SteadyNowMs();
  auto r = RunAndCapture(runner, spec, 300);
  ASSERT_OK(r.status());
  int64_t elapsed = SteadyNowMs() - t0;
  EXPECT_TRUE(r->result.timed_out);
  EXPECT_FALSE(r->result.killed);
  EXPECT_EQ(r->out, "begin\n");
  EXPECT_GE(elapsed, 300);
  EXPECT_LT(elapsed, 3000);
}

TEST(ProcessTest, PeakRssCoversTheChild) {
  RealProcessRunner runner;
  // python3 allocating ~64 MiB must show up as at least that much peak RSS.
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-c",
               "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"};
  auto r = RunAndCapture(runner, spec, 30000);
  ASSERT_OK(r.status());
  ASSERT_EQ(r->result.exit_code, 0) << r->err;
  EXPECT_GT(r->result.peak_rss_bytes, 64LL << 20);
}

TEST(FindInPathTest, SkipsMissingAndNonExecutable) {
  testing::ScopedTempDir tmp;
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/a"));
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/b"));
  ASSERT_OK(fs::WriteFileAtomic(tmp.path() + "/a/tool", "x", 0644));
  ASSERT_OK(fs::WriteFileAtomic(tmp.path() + "/b/tool", "x", 0755));
  std::string path = "/nonexistent:" + tmp.path() + "/a::" + tmp.path() + "/b";
  EXPECT_EQ(FindInPath("tool", path.c_str()), tmp.path() + "/b/tool");
  EXPECT_EQ(FindInPath("other", path.c_str()), "");
  EXPECT_EQ(FindInPath("a/tool", tmp.path().c_str()), "");  // a name, not a path
}

}  // namespace
}  // namespace farm
