// Who builds run as: a root worker never runs them as root, a worker that is not root runs
// them as itself, and the workspace is handed over without following a link.
#include "common/sandbox/build_user.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::sandbox {
namespace {

TEST(BuildUserTest, ARootWorkerPicksAnUnprivilegedUser) {
  auto user = ResolveBuildUser("auto", 0);
  ASSERT_OK(user.status());  // every Debian host has nobody
  EXPECT_TRUE(user->switches);
  EXPECT_NE(user->uid, 0u);
  EXPECT_NE(user->gid, 0u);
  auto ids = ResolveBuildUser("1234:5678", 0);
  ASSERT_OK(ids.status());
  EXPECT_EQ(ids->uid, 1234u);
  EXPECT_EQ(ids->gid, 5678u);
  EXPECT_EQ(ids->name, "1234:5678 (1234:5678)");
  for (const char* bad :
       {"root", "0:0", "1000:0", "0:1000", "no-such-user-here", "1:x", ":", "1:"}) {
    EXPECT_FALSE(ResolveBuildUser(bad, 0).ok()) << bad;
  }
}

TEST(BuildUserTest, AWorkerThatIsNotRootRunsBuildsAsItself) {
  auto user = ResolveBuildUser("auto", 1000);
  ASSERT_OK(user.status());
  EXPECT_FALSE(user->switches);
  EXPECT_EQ(ResolveBuildUser("nobody", 1000).status().code(), StatusCode::kInvalidArgument);
}

TEST(BuildUserTest, GivesTheTreeAwayWithoutFollowingLinks) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give files to another user";
  testing::ScopedTempDir dir;
  const std::string ws = dir.path() + "/ws";
  ASSERT_OK(fs::MakeDirs(ws + "/src/sub"));
  ASSERT_OK(fs::WriteFileAtomic(ws + "/src/sub/a.py", "x"));
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/host-file", "root's"));
  ASSERT_EQ(::symlink((dir.path() + "/host-file").c_str(), (ws + "/src/link").c_str()), 0);
  BuildUser user{.switches = true, .uid = 4321, .gid = 4322, .name = "test"};
  ASSERT_OK(GiveToBuildUser(user, ws, true));
  struct stat st {};
  for (const std::string& p : {ws, ws + "/src", ws + "/src/sub", ws + "/src/sub/a.py"}) {
    ASSERT_EQ(::lstat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 4321u) << p;
    EXPECT_EQ(st.st_gid, 4322u) << p;
  }
  ASSERT_EQ(::stat((dir.path() + "/host-file").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);  // the link itself changed hands, not what it points to
  EXPECT_OK(GiveToBuildUser(BuildUser{}, ws, true));  // no switch: nothing to do
}

TEST(BuildUserTest, NeverGivesAwayAFileASnapshotShares) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give files to another user";
  testing::ScopedTempDir dir;
  const std::string snapshot = dir.path() + "/snapshot";
  const std::string ws = dir.path() + "/ws";
  ASSERT_OK(fs::MakeDirs(snapshot + "/lib"));
  ASSERT_OK(fs::MakeDirs(ws + "/venv/lib"));
  ASSERT_OK(fs::WriteFileAtomic(snapshot + "/lib/torch.py", "clean", 0444));
  ASSERT_EQ(::link((snapshot + "/lib/torch.py").c_str(), (ws + "/venv/lib/torch.py").c_str()), 0);
  ASSERT_OK(fs::WriteFileAtomic(ws + "/venv/lib/own.py", "x"));
  BuildUser user{.switches = true, .uid = 4321, .gid = 4322, .name = "test"};
  ASSERT_OK(GiveToBuildUser(user, ws, true));
  struct stat st {};
  ASSERT_EQ(::stat((snapshot + "/lib/torch.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);  // the snapshot's inode stayed root's
  ASSERT_EQ(::stat((ws + "/venv/lib").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);  // the clone's folders are the user's
  ASSERT_EQ(::stat((ws + "/venv/lib/own.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  // Taken back: everything root's again, without write bits for others.
  ASSERT_OK(::chmod((ws + "/venv/lib/own.py").c_str(), 0666) == 0 ? Status::Ok()
                                                                  : Status::Internal("chmod"));
  ASSERT_OK(TakeBackFromBuildUser(user, ws));
  ASSERT_EQ(::stat((ws + "/venv/lib/own.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

}  // namespace
}  // namespace farm::sandbox
