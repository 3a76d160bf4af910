#include "worker/agent/workspace.h"

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

std::map<std::string, std::string> ToolEnv() {
  return {{"PATH", "/usr/bin:/bin"}, {"HOME", "/nonexistent"}, {"GIT_TERMINAL_PROMPT", "0"},
          {"GIT_CONFIG_NOSYSTEM", "1"}};
}

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.path() + "/pkg";
    ASSERT_OK(fs::MakeDirs(src_ + "/sub"));
    ASSERT_OK(fs::WriteFileAtomic(src_ + "/setup.py", "print('v1')\n"));
    ASSERT_OK(fs::WriteFileAtomic(src_ + "/sub/data.txt", "data\n"));
  }
  Status Sh(const std::string& script) {
    ProcessSpec spec;
    spec.argv = {"bash", "-ec", script};
    spec.cwd = dir_.path();
    spec.env = ToolEnv();
    spec.clear_env = true;
    FARM_ASSIGN_OR_RETURN(auto out, RunAndCapture(runner_, spec, 30000));
    if (out.result.exit_code != 0) return Status::Internal(out.err);
    return Status::Ok();
  }
  std::string Read(const std::string& path) {
    auto r = fs::ReadFile(path);
    return r.ok() ? *r : "<missing>";
  }

  testing::ScopedTempDir dir_;
  RealProcessRunner runner_;
  StepRunner steps_{runner_, ToolEnv(), nullptr, nullptr};
  std::string src_;
};

TEST_F(WorkspaceTest, CopiesALocalDirectory) {
  farm::v1::Source source;
  source.set_local_path(src_);
  ASSERT_OK(FetchSource(steps_, source, dir_.path() + "/ws-src"));
  EXPECT_EQ(Read(dir_.path() + "/ws-src/sub/data.txt"), "data\n");
  source.set_local_path(dir_.path() + "/nope");
  Status missing = FetchSource(steps_, source, dir_.path() + "/ws2");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
}

TEST_F(WorkspaceTest, ExtractsTarballsAndUnwrapsOneTopDirectory) {
  ASSERT_OK(Sh("tar -czf pkg.tar.gz pkg && tar -C pkg -cf flat.tar setup.py sub && "
               "tar -cf - pkg | zstd -q -o pkg.tar.zst"));
  for (const char* name : {"pkg.tar.gz", "flat.tar", "pkg.tar.zst"}) {
    farm::v1::Source source;
    source.set_tarball_path(dir_.path() + "/" + name);
    std::string dest = dir_.path() + "/out-" + name;
    ASSERT_OK(FetchSource(steps_, source, dest));
    EXPECT_EQ(Read(dest + "/setup.py"), "print('v1')\n") << name;
    EXPECT_EQ(Read(dest + "/sub/data.txt"), "data\n") << name;
  }
  farm::v1::Source bad;
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/bad.tar.gz", "not a tarball"));
  bad.set_tarball_path(dir_.path() + "/bad.tar.gz");
  Status s = FetchSource(steps_, bad, dir_.path() + "/out-bad");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad.tar.gz"), std::string::npos) << s.message();
}

TEST_F(WorkspaceTest, ClonesAGitRepositoryAtItsCommit) {
  ASSERT_OK(Sh("cd pkg && git init -q && git add -A && "
               "git -c user.name=t -c user.email=t@e commit -qm one && "
               "git rev-parse HEAD > ../first && echo \"print('v2')\" > setup.py && "
               "git -c user.name=t -c user.email=t@e commit -qam two"));
  std::string first = Read(dir_.path() + "/first");
  first.pop_back();
  farm::v1::Source source;
  source.mutable_git()->set_url(src_);
  source.mutable_git()->set_commit(first);
  ASSERT_OK(FetchSource(steps_, source, dir_.path() + "/clone"));
  EXPECT_EQ(Read(dir_.path() + "/clone/setup.py"), "print('v1')\n");

  source.mutable_git()->set_commit("0123456789012345678901234567890123456789");
  Status s = FetchSource(steps_, source, dir_.path() + "/clone2");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("git checkout"), std::string::npos) << s.message();
}

TEST_F(WorkspaceTest, AppliesPatchesAndNamesTheOneThatFails) {
  farm::v1::Patch good;
  good.set_name("patches/fix.diff");
  good.set_content(
      "--- a/setup.py\n+++ b/setup.py\n@@ -1 +1 @@\n-print('v1')\n+print('patched')\n");
  ASSERT_OK(ApplyPatches(steps_, {good}, src_, dir_.path() + "/patches"));
  EXPECT_EQ(Read(src_ + "/setup.py"), "print('patched')\n");
  EXPECT_TRUE(fs::Exists(src_ + "/.git"));  // initialised so git apply works here

  farm::v1::Patch bad;
  bad.set_name("patches/stale.diff");
  bad.set_content("--- a/setup.py\n+++ b/setup.py\n@@ -1 +1 @@\n-print('v0')\n+print('x')\n");
  Status s = ApplyPatches(steps_, {bad}, src_, dir_.path() + "/patches2");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("patches/stale.diff"), std::string::npos) << s.message();
  EXPECT_EQ(Read(src_ + "/setup.py"), "print('patched')\n");
}

TEST_F(WorkspaceTest, StoppedJobRunsNoFurtherStep) {
  JobControl control;
  control.Stop(farm::v1::CAUSE_CANCELLED, "cancelled by farmd");
  StepRunner steps(runner_, ToolEnv(), &control, nullptr);
  Status s = steps.Run({"true"}, dir_.path());
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace farm::agent
