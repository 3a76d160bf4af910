#include "daemon/store/blob/temp_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

constexpr int64_t kDay = 24 * 3600;

bool AnyName(const std::string&) { return true; }

class TempFilesTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  // A file as a writer that died leaves it: complete, unlocked.
  void Orphan(const std::string& name, const std::string& data = "partial upload") {
    ASSERT_OK(fs::WriteFileAtomic(Path(name), data, 0600));
  }
  void Age(const std::string& name, int64_t seconds) {
    timespec times[2] = {{.tv_sec = ::time(nullptr) - seconds, .tv_nsec = 0},
                         {.tv_sec = ::time(nullptr) - seconds, .tv_nsec = 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, Path(name).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }
  SweepCounts Sweep(const std::function<bool(const std::string&)>& is_temp = AnyName) {
    auto counts = SweepTempDir(dir_.path(), is_temp, ::time(nullptr));
    EXPECT_OK(counts.status());
    return counts.ok() ? counts.value() : SweepCounts{};
  }

  testing::ScopedTempDir dir_;
};

TEST_F(TempFilesTest, AFileOfAWriterThatIsGoneIsRemovedAndALiveWritersIsKept) {
  auto live = CreateLockedFile(Path("live.part"));
  ASSERT_OK(live.status());
  ASSERT_GE(fputs("half", live->file), 0);
  fflush(live->file);
  Orphan("dead.part", std::string(1000, 'x'));
  SweepCounts counts = Sweep();
  EXPECT_EQ(counts.files, 1);
  EXPECT_EQ(counts.bytes, 1000);
  EXPECT_TRUE(fs::Exists(Path("live.part")));
  EXPECT_FALSE(fs::Exists(Path("dead.part")));
  // Closing the file keeps the lock (the writer is still checking it); the lock's end is
  // the writer's.
  fclose(live->file);
  EXPECT_EQ(Sweep().files, 0);
  ::close(live->lock_fd);
  EXPECT_EQ(Sweep().files, 1);
  EXPECT_FALSE(fs::Exists(Path("live.part")));
}

TEST_F(TempFilesTest, AFileCreatedLockedIsNeverSeenUnlockedUnderItsName) {
  // Created under a hidden name, locked, then renamed: no other name is left behind.
  auto f = CreateLockedFile(Path("blob.tmp"));
  ASSERT_OK(f.status());
  EXPECT_TRUE(fs::Exists(Path("blob.tmp")));
  EXPECT_FALSE(fs::Exists(Path(".blob.tmp.new")));
  struct stat st {};
  ASSERT_EQ(::stat(Path("blob.tmp").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(CreateLockedFile(Path("blob.tmp")).status().code(), StatusCode::kInternal)
      << "an existing name is never reused";
  fclose(f->file);
  ::close(f->lock_fd);
}

TEST_F(TempFilesTest, OldFilesGoEvenWhileLockedAndHiddenOnesOnlyByAge) {
  auto stalled = CreateLockedFile(Path("stalled.part"));
  ASSERT_OK(stalled.status());
  Age("stalled.part", 2 * kDay);
  Orphan(".young.part.new");
  Orphan(".old.part.new");
  Age(".old.part.new", 2 * kDay);
  EXPECT_EQ(Sweep().files, 2);
  EXPECT_FALSE(fs::Exists(Path("stalled.part")));
  EXPECT_TRUE(fs::Exists(Path(".young.part.new")));  // its writer may be about to lock it
  EXPECT_FALSE(fs::Exists(Path(".old.part.new")));
  fclose(stalled->file);
  ::close(stalled->lock_fd);
}

TEST_F(TempFilesTest, OnlyRegularFilesOfTheNamesAskedForAreTouched) {
  Orphan("keep.whl");
  Orphan("x.part-123");
  ASSERT_EQ(::symlink("/etc/passwd", Path("link.part-1").c_str()), 0);
  ASSERT_OK(fs::MakeDirs(Path("dir.part-2")));
  Age("keep.whl", 3 * kDay);
  auto parts = [](const std::string& name) { return name.find(".part-") != std::string::npos; };
  EXPECT_EQ(Sweep(parts).files, 1);
  EXPECT_TRUE(fs::Exists(Path("keep.whl")));
  EXPECT_FALSE(fs::Exists(Path("x.part-123")));
  EXPECT_TRUE(fs::Exists(Path("dir.part-2")));
  EXPECT_TRUE(fs::Exists("/etc/passwd"));
  struct stat st {};
  EXPECT_EQ(::lstat(Path("link.part-1").c_str(), &st), 0);
}

TEST_F(TempFilesTest, AMissingDirectorySweepsNothing) {
  auto counts = SweepTempDir(Path("absent"), AnyName, ::time(nullptr));
  ASSERT_OK(counts.status());
  EXPECT_EQ(counts->files, 0);
}

}  // namespace
}  // namespace farm::store
