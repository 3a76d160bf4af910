#include "common/fs.h"

#include <sys/stat.h>

#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm {
namespace {

TEST(FsTest, AtomicWriteReplacesContentAndSetsMode) {
  testing::ScopedTempDir dir;
  std::string path = dir.path() + "/secret";
  ASSERT_OK(fs::WriteFileAtomic(path, "one", 0600));
  ASSERT_OK(fs::WriteFileAtomic(path, "two", 0600));
  auto content = fs::ReadFile(path);
  ASSERT_OK(content.status());
  EXPECT_EQ(content.value(), "two");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(FsTest, ReadMissingFileIsNotFound) {
  auto r = fs::ReadFile("/nonexistent/farm/file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(RandomHex(16).size(), 32u);
}

}  // namespace
}  // namespace farm
