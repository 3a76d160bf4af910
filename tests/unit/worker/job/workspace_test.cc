#include "worker/job/workspace.h"

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

std::map<std::string, std::string> ToolEnv() {
  return {{"PATH", "/usr/bin:/bin"},
          {"HOME", "/nonexistent"},
          {"GIT_TERMINAL_PROMPT", "0"},
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
  GitFetch git_{&steps_, git::GitPolicy{}};
  std::string src_;
};

// A fetcher that hands out files of the test directory as farmd's archives.
ArchiveFetcher CopyFrom(const std::string& dir, int* calls = nullptr) {
  return [dir, calls](const farm::v1::SourceArchive& archive, const std::string& path) -> Status {
    if (calls != nullptr) ++*calls;
    FARM_ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(dir + "/" + archive.origin()));
    return fs::WriteFileAtomic(path, bytes);
  };
}

farm::v1::Source Archive(const std::string& file, bool unwrap) {
  farm::v1::Source source;
  source.mutable_archive()->set_sha256(std::string(64, 'a'));
  source.mutable_archive()->set_origin(file);
  source.mutable_archive()->set_unwrap_single_directory(unwrap);
  return source;
}

TEST_F(WorkspaceTest, NeverReadsAPathTheSubmittingMachineNamed) {
  int calls = 0;
  farm::v1::Source source;
  source.set_local_path(src_);
  Status s =
      FetchSource(steps_, git_, source, dir_.path() + "/ws-src", CopyFrom(dir_.path(), &calls));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("never reads"), std::string::npos) << s.message();
  source.set_tarball_path(dir_.path() + "/pkg.tar.gz");
  EXPECT_EQ(
      FetchSource(steps_, git_, source, dir_.path() + "/ws-src", CopyFrom(dir_.path())).code(),
      StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::Exists(dir_.path() + "/ws-src"));
  EXPECT_EQ(calls, 0);
}

TEST_F(WorkspaceTest, UnpacksArchivesAndUnwrapsATarballsOneTopDirectory) {
  ASSERT_OK(
      Sh("tar -czf pkg.tar.gz pkg && tar -C pkg -cf flat.tar setup.py sub && "
         "tar -cf - pkg | zstd -q -o pkg.tar.zst"));
  for (const char* name : {"pkg.tar.gz", "flat.tar", "pkg.tar.zst"}) {
    std::string dest = dir_.path() + "/out-" + name;
    ASSERT_OK(FetchSource(steps_, git_, Archive(name, true), dest, CopyFrom(dir_.path())));
    EXPECT_EQ(Read(dest + "/setup.py"), "print('v1')\n") << name;
    EXPECT_EQ(Read(dest + "/sub/data.txt"), "data\n") << name;
    EXPECT_FALSE(fs::Exists(dest + ".archive")) << "the download is removed once unpacked";
  }
  // A packed directory that holds one directory stays as it is.
  std::string dest = dir_.path() + "/out-tree";
  ASSERT_OK(FetchSource(steps_, git_, Archive("pkg.tar.gz", false), dest, CopyFrom(dir_.path())));
  EXPECT_EQ(Read(dest + "/pkg/setup.py"), "print('v1')\n");
}

TEST_F(WorkspaceTest, RefusesAHostileArchiveAndSaysWhyADownloadFailed) {
  ASSERT_OK(
      Sh("python3 -c \"import io, tarfile\n"
         "t = tarfile.open('evil.tar', 'w')\n"
         "i = tarfile.TarInfo('../evil.py'); i.size = 1\n"
         "t.addfile(i, io.BytesIO(b'x')); t.close()\""));
  ASSERT_OK(fs::MakeDirs(dir_.path() + "/box"));
  Status s = FetchSource(steps_, git_, Archive("evil.tar", true), dir_.path() + "/box/src",
                         CopyFrom(dir_.path()));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("path-dotdot: ../evil.py"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::Exists(dir_.path() + "/box/evil.py"));
  ArchiveFetcher broken = [](const farm::v1::SourceArchive&, const std::string&) {
    return Status::DataLoss("the source archive arrived with 3 bytes");
  };
  s = FetchSource(steps_, git_, Archive("x.tar", true), dir_.path() + "/ws3", broken);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("source archive aaaa"), std::string::npos) << s.message();
}

// Whatever farmd passes on, a worker never clones a path of its own host (or file://,
// ext::, ...): git does not even start, and nothing of the repository is copied.
TEST_F(WorkspaceTest, NeverClonesALocalRepositoryEvenIfFarmdPassedOne) {
  ASSERT_OK(
      Sh("cd pkg && echo secret > SECRET && git init -q && git add -A && "
         "git -c user.name=t -c user.email=t@e commit -qm one && "
         "git rev-parse HEAD > ../first"));
  std::string first = Read(dir_.path() + "/first");
  first.pop_back();
  farm::testing::RecordingRunner recorder;
  StepRunner steps(recorder, ToolEnv(), nullptr, nullptr);
  GitFetch git{&steps, git::GitPolicy{}};
  for (const std::string& url : {src_, "file://" + src_, src_ + "/.git", std::string("../pkg"),
                                 std::string("ext::cat"), std::string("fd::0")}) {
    farm::v1::Source source;
    source.mutable_git()->set_url(url);
    source.mutable_git()->set_commit(first);
    Status s = FetchSource(steps_, git, source, dir_.path() + "/clone", nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << url << ": " << s.ToString();
    EXPECT_NE(s.message().find("git sources must be remote https:// URLs"), std::string::npos)
        << s.message();
  }
  EXPECT_TRUE(recorder.started.empty());
  EXPECT_FALSE(fs::Exists(dir_.path() + "/clone"));
}

// A remote URL is cloned with the farm's locked-down git: its arguments before the
// subcommand, no submodules, a timeout, the commit checked out after "--".
TEST_F(WorkspaceTest, ClonesARemoteUrlWithTheLockedDownGit) {
  farm::testing::RecordingRunner recorder;
  StepRunner steps(recorder, ToolEnv(), nullptr, nullptr);
  GitFetch git{&steps, git::GitPolicy{}};
  farm::v1::Source source;
  source.mutable_git()->set_url("https://example.invalid/x.git");
  source.mutable_git()->set_commit("0123456789012345678901234567890123456789");
  EXPECT_FALSE(FetchSource(steps_, git, source, dir_.path() + "/clone", nullptr).ok());
  ASSERT_EQ(recorder.started.size(), 1u);  // the clone; it failed, so no checkout
  const std::vector<std::string>& argv = recorder.started[0];
  EXPECT_EQ(argv[0], "git");
  EXPECT_EQ(argv[1], "-c");
  EXPECT_EQ(argv[2], "credential.helper=");
  std::vector<std::string> tail(argv.end() - 6, argv.end());
  EXPECT_EQ(tail,
            (std::vector<std::string>{"clone", "--quiet", "--no-recurse-submodules", "--",
                                      "https://example.invalid/x.git", dir_.path() + "/clone"}));
  source.mutable_git()->set_commit("--orphan=x");
  Status odd = FetchSource(steps_, git, source, dir_.path() + "/clone3", nullptr);
  EXPECT_EQ(odd.code(), StatusCode::kInvalidArgument) << odd.ToString();
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
