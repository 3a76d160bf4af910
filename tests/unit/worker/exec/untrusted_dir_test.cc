// Reading a hostile workspace: links anywhere on the way are refused, never followed;
// FIFOs, devices, directories and hard links are refused without blocking; reads are
// bounded; a copy takes exactly the file that was listed.
#include "worker/exec/untrusted_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

class UntrustedDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = dir_.path() + "/ws";
    host_ = dir_.path() + "/host";
    ASSERT_OK(fs::MakeDirs(ws_ + "/wheels"));
    ASSERT_OK(fs::MakeDirs(host_));
    ASSERT_OK(fs::WriteFileAtomic(host_ + "/secret.whl", "host-only bytes"));
    ASSERT_OK(fs::WriteFileAtomic(ws_ + "/wheels/a-1.0-py3-none-any.whl", "wheel a"));
    ASSERT_OK(fs::WriteFileAtomic(ws_ + "/wheels/b-1.0-py3-none-any.whl", "wheel b"));
  }
  UntrustedDir Open() {
    auto d = UntrustedDir::Open(ws_);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return std::move(d).value();
  }
  static void ExpectRefused(const Status& s, const std::string& says) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find(says), std::string::npos) << s.ToString();
  }

  testing::ScopedTempDir dir_;
  std::string ws_, host_;
};

TEST_F(UntrustedDirTest, ListsAndReadsRegularFilesInside) {
  UntrustedDir d = Open();
  auto files = d.ListFiles("wheels", ".whl");
  ASSERT_OK(files.status());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].name, "a-1.0-py3-none-any.whl");
  EXPECT_EQ((*files)[0].size, 7);
  auto text = d.ReadFile("wheels/b-1.0-py3-none-any.whl", 100);
  ASSERT_OK(text.status());
  EXPECT_EQ(*text, "wheel b");
  const std::string out = dir_.path() + "/out.whl";
  auto copied = d.CopyOut("wheels", (*files)[0], out, 100);
  ASSERT_OK(copied.status());
  EXPECT_EQ(*copied, 7);
  EXPECT_EQ(*fs::ReadFile(out), "wheel a");
}

TEST_F(UntrustedDirTest, AWheelDirectoryLinkedToAHostFolderIsRefused) {
  ASSERT_OK(fs::RemoveAll(ws_ + "/wheels"));
  ASSERT_EQ(::symlink(host_.c_str(), (ws_ + "/wheels").c_str()), 0);
  UntrustedDir d = Open();
  ExpectRefused(d.ListFiles("wheels", ".whl").status(), "wheels is a symbolic link");
  ExpectRefused(d.ReadFile("wheels/secret.whl", 100).status(), "is a symbolic link");
}

TEST_F(UntrustedDirTest, ALinkedWheelIsRefusedAndTheHostFileIsUntouched) {
  ASSERT_EQ(
      ::symlink((host_ + "/secret.whl").c_str(), (ws_ + "/wheels/c-1.0-py3-none-any.whl").c_str()),
      0);
  UntrustedDir d = Open();
  ExpectRefused(d.ListFiles("wheels", ".whl").status(),
                "wheels/c-1.0-py3-none-any.whl is a symbolic link");
  ExpectRefused(d.OpenFile("wheels/c-1.0-py3-none-any.whl").status(), "is a symbolic link");
  EXPECT_EQ(*fs::ReadFile(host_ + "/secret.whl"), "host-only bytes");
}

TEST_F(UntrustedDirTest, ALinkHigherUpThePathIsRefusedToo) {
  ASSERT_OK(fs::MakeDirs(host_ + "/validate"));
  ASSERT_OK(fs::WriteFileAtomic(host_ + "/validate/report.json", "{}"));
  ASSERT_EQ(::symlink(host_.c_str(), (ws_ + "/up").c_str()), 0);
  UntrustedDir d = Open();
  ExpectRefused(d.ReadFile("up/validate/report.json", 100).status(), "(at up) is a symbolic link");
}

TEST_F(UntrustedDirTest, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((ws_ + "/wheels/f-1.0-py3-none-any.whl").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((ws_ + "/stats.log").c_str(), 0644), 0);
  UntrustedDir d = Open();
  ExpectRefused(d.ListFiles("wheels", ".whl").status(), "is a FIFO");
  ExpectRefused(d.ReadFile("stats.log", 100).status(), "stats.log is a FIFO");
}

TEST_F(UntrustedDirTest, DirectoriesDevicesAndHardLinksAreRefused) {
  ASSERT_OK(fs::MakeDirs(ws_ + "/wheels/d-1.0-py3-none-any.whl"));
  UntrustedDir d = Open();
  ExpectRefused(d.ListFiles("wheels", ".whl").status(), "is a directory");
  ASSERT_OK(fs::RemoveAll(ws_ + "/wheels/d-1.0-py3-none-any.whl"));
  ASSERT_EQ(::link((ws_ + "/wheels/a-1.0-py3-none-any.whl").c_str(), (ws_ + "/hard").c_str()), 0);
  ExpectRefused(d.ListFiles("wheels", ".whl").status(), "hard links");
  ExpectRefused(d.ReadFile("hard", 100).status(), "hard links");
  // /dev/null is a device (and on another file system): refused either way.
  UntrustedDir dev = std::move(UntrustedDir::Open("/dev")).value();
  EXPECT_EQ(dev.ReadFile("null", 100).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(UntrustedDirTest, ReadsAndCopiesAreBounded) {
  UntrustedDir d = Open();
  ExpectRefused(d.ReadFile("wheels/a-1.0-py3-none-any.whl", 3).status(), "more than 3 bytes");
  auto files = d.ListFiles("wheels", ".whl");
  ASSERT_OK(files.status());
  ExpectRefused(d.CopyOut("wheels", (*files)[0], dir_.path() + "/big.whl", 3).status(),
                "more than the worker takes");
  EXPECT_FALSE(fs::Exists(dir_.path() + "/big.whl"));
}

TEST_F(UntrustedDirTest, ACopyTakesOnlyTheFileThatWasListed) {
  UntrustedDir d = Open();
  auto files = d.ListFiles("wheels", ".whl");
  ASSERT_OK(files.status());
  // Replaced between listing and copying (a new inode under the same name).
  ASSERT_OK(fs::WriteFileAtomic(ws_ + "/wheels/a-1.0-py3-none-any.whl", "swapped"));
  ExpectRefused(d.CopyOut("wheels", (*files)[0], dir_.path() + "/a.whl", 100).status(),
                "was replaced after it was listed");
  // The destination is never overwritten, nor followed when it is a link.
  ASSERT_EQ(::symlink((host_ + "/secret.whl").c_str(), (dir_.path() + "/b.whl").c_str()), 0);
  EXPECT_FALSE(d.CopyOut("wheels", (*files)[1], dir_.path() + "/b.whl", 100).ok());
  EXPECT_EQ(*fs::ReadFile(host_ + "/secret.whl"), "host-only bytes");
}

TEST_F(UntrustedDirTest, MissingFilesAreNotFoundAndBadPathsInvalid) {
  UntrustedDir d = Open();
  EXPECT_EQ(d.ReadFile("nothing", 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(d.ListFiles("nothing", ".whl").status().code(), StatusCode::kNotFound);
  for (const char* bad : {"", "/etc/passwd", "../host/secret.whl", "wheels/../../x", "a//b", "."}) {
    EXPECT_EQ(d.ReadFile(bad, 10).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  ASSERT_EQ(::symlink(host_.c_str(), (dir_.path() + "/wslink").c_str()), 0);
  ExpectRefused(UntrustedDir::Open(dir_.path() + "/wslink").status(), "is a symbolic link");
}

TEST_F(UntrustedDirTest, CopyOutFilesTakesCopiesAndLeavesTheBuildsFilesAlone) {
  const std::string out = dir_.path() + "/out";
  auto copies = CopyOutFiles(ws_, "wheels", ".whl", out, 100);
  ASSERT_OK(copies.status());
  EXPECT_EQ(*copies, (std::vector<std::string>{out + "/a-1.0-py3-none-any.whl",
                                               out + "/b-1.0-py3-none-any.whl"}));
  EXPECT_EQ(*fs::ReadFile(ws_ + "/wheels/a-1.0-py3-none-any.whl"), "wheel a");
  // A wheel folder that is a link to a host folder: refused, nothing copied.
  ASSERT_OK(fs::RemoveAll(ws_ + "/wheels"));
  ASSERT_EQ(::symlink(host_.c_str(), (ws_ + "/wheels").c_str()), 0);
  ExpectRefused(CopyOutFiles(ws_, "wheels", ".whl", out, 100).status(),
                "wheels is a symbolic link");
  EXPECT_EQ(CopyOutFiles(ws_, "none", ".whl", out, 100).status().code(), StatusCode::kNotFound);
}

TEST_F(UntrustedDirTest, MakeFreshDirRemovesALinkWithoutFollowingIt) {
  ASSERT_EQ(::symlink(host_.c_str(), (ws_ + "/validate").c_str()), 0);
  auto made = MakeFreshDir(ws_, "validate");
  ASSERT_OK(made.status());
  EXPECT_EQ(*made, ws_ + "/validate");
  struct stat st {};
  ASSERT_EQ(::lstat(made->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(*fs::ReadFile(host_ + "/secret.whl"), "host-only bytes");  // the target stays
  EXPECT_EQ(MakeFreshDir(ws_, "../x").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::agent
