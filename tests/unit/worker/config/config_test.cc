// farm-worker's flags and config file (config.h).
#include "worker/config/config.h"

#include <cstdlib>
#include <filesystem>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

Result<WorkerConfig> Parse(std::vector<std::string> args, bool* help) {
  static std::vector<std::string> storage;
  storage = std::move(args);
  storage.insert(storage.begin(), "farm-worker");
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  return ParseWorkerFlags(static_cast<int>(argv.size()), argv.data(), help);
}

TEST(ConfigTest, ParsesTheFlags) {
  bool help = false;
  auto c = Parse({"--server", "127.0.0.1:5000", "--state-dir", "/s", "--label", "gpu=h100",
                  "--label", "zone=a", "--max-jobs", "3", "--python", "/usr/bin/python3.11",
                  "--log-json", "--keep-workspaces", "--name", "w1"},
                 &help);
  ASSERT_OK(c.status());
  EXPECT_EQ(c->server, "127.0.0.1:5000");
  EXPECT_EQ(c->work_dir, "/s/work");
  EXPECT_EQ(c->labels.at("gpu"), "h100");
  EXPECT_EQ(c->labels.at("zone"), "a");
  EXPECT_EQ(c->max_jobs, 3);
  EXPECT_EQ(c->pythons, (std::vector<std::string>{"/usr/bin/python3.11"}));
  EXPECT_TRUE(c->log_json);
  EXPECT_TRUE(c->keep_workspaces);
  EXPECT_EQ(c->name, "w1");
  EXPECT_EQ(c->log_buffer_bytes, int64_t{64} << 20);
  // The default state dir is relative to where the worker starts, and made absolute: the
  // probe kernels and builds run in other directories.
  auto relative = Parse({"--server", "a:1"}, &help);
  ASSERT_OK(relative.status());
  const std::filesystem::path state = std::filesystem::current_path() / "farm-worker-state";
  EXPECT_EQ(relative->state_dir, state.string());
  EXPECT_EQ(relative->work_dir, (state / "work").string());
  EXPECT_EQ(relative->ccache_dir, (state / "work" / "ccache").string());
  auto small = Parse({"--server", "a:1", "--log-buffer-mib", "8"}, &help);
  ASSERT_OK(small.status());
  EXPECT_EQ(small->log_buffer_bytes, int64_t{8} << 20);
  EXPECT_FALSE(Parse({"--server", "a:1", "--log-buffer-mib", "0"}, &help).ok());
  EXPECT_FALSE(Parse({"--server", "a:1", "--log-buffer-mib", "5000"}, &help).ok());
  EXPECT_FALSE(Parse({"--state-dir", "/s"}, &help).ok());  // no server
  EXPECT_FALSE(Parse({"--server", "a:1", "--server-file", "f"}, &help).ok());
  EXPECT_FALSE(Parse({"--server", "a:1", "--label", "novalue"}, &help).ok());
  EXPECT_FALSE(Parse({"--server", "a:1", "--max-jobs", "0"}, &help).ok());
  EXPECT_FALSE(Parse({"--server", "a:1", "--bogus"}, &help).ok());
}

TEST(ConfigTest, ServerFileAndEnrollToken) {
  testing::ScopedTempDir dir;
  WorkerConfig c;
  c.server_file = dir.path() + "/farmd.addr";
  EXPECT_EQ(ResolveServerAddress(c, 200).status().code(), StatusCode::kUnavailable);
  ASSERT_OK(fs::WriteFileAtomic(c.server_file, "127.0.0.1:4321\n"));
  EXPECT_EQ(ResolveServerAddress(c, 200).value(), "127.0.0.1:4321");

  c.enroll_token_file = dir.path() + "/enroll.token";
  ASSERT_OK(fs::WriteFileAtomic(c.enroll_token_file, "  enroll-abc \n"));
  EXPECT_EQ(LoadEnrollToken(c).value(), "enroll-abc");
  c.enroll_token_file.clear();
  ::setenv("FARM_ENROLL_TOKEN", "from-env", 1);
  EXPECT_EQ(LoadEnrollToken(c).value(), "from-env");
  ::unsetenv("FARM_ENROLL_TOKEN");
  EXPECT_EQ(LoadEnrollToken(c).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ConfigTest, ProvisionUvIsFoundOnPathGivenOrOff) {
  testing::ScopedTempDir dir;
  ASSERT_OK(fs::MakeDirs(dir.path() + "/bin"));
  std::string uv = dir.path() + "/bin/uv";
  ASSERT_OK(fs::WriteFileAtomic(uv, "#!/bin/sh\n", 0755));
  const char* old = getenv("PATH");
  std::string saved = old != nullptr ? old : "";
  ::setenv("PATH", ("relative/bin:" + dir.path() + "/bin:/usr/bin").c_str(), 1);
  bool help = false;
  auto found = Parse({"--server", "a:1"}, &help);
  auto off = Parse({"--server", "a:1", "--provision-uv", "off"}, &help);
  auto given = Parse({"--server", "a:1", "--provision-uv", uv}, &help);
  ::setenv("PATH", "/nonexistent", 1);
  auto none = Parse({"--server", "a:1"}, &help);
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_OK(found.status());
  EXPECT_EQ(found->provision.uv, uv);  // auto: the first uv on PATH
  EXPECT_EQ(off->provision.uv, "");
  EXPECT_EQ(given->provision.uv, uv);
  EXPECT_EQ(none->provision.uv, "");  // no uv: pip installs
  for (const std::string& bad : {std::string("uv"), dir.path() + "/bin/missing", std::string()}) {
    auto refused = Parse({"--server", "a:1", "--provision-uv", bad}, &help);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace farm::agent
