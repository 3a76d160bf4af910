#include "daemon/store/blob_store.h"

#include "common/fs.h"
#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

TEST(BlobStoreTest, CommitsOnlyVerifiedContent) {
  testing::ScopedTempDir dir;
  auto blobs = BlobStore::Open(dir.path() + "/cas");
  ASSERT_OK(blobs.status());
  std::string data = "wheel bytes";
  std::string sha = Sha256Hex(data);
  auto w = blobs.value()->BeginWrite(static_cast<int64_t>(data.size()), sha);
  ASSERT_OK(w.status());
  ASSERT_OK(w.value()->Append("wheel "));
  ASSERT_OK(w.value()->Append("bytes"));
  ASSERT_OK(w.value()->Commit());
  EXPECT_TRUE(blobs.value()->Contains(sha));
  EXPECT_EQ(fs::ReadFile(blobs.value()->PathFor(sha)).value(), data);
}

TEST(BlobStoreTest, RejectsWrongDigestAndOversize) {
  testing::ScopedTempDir dir;
  auto blobs = BlobStore::Open(dir.path());
  std::string sha = Sha256Hex("expected");
  auto w = blobs.value()->BeginWrite(8, sha);
  ASSERT_OK(w->get()->Append("tampered"));
  Status s = w.value()->Commit();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_FALSE(blobs.value()->Contains(sha));
  auto small = blobs.value()->BeginWrite(2, sha);
  EXPECT_EQ(small.value()->Append("abc").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(blobs.value()->BeginWrite(1, "nothex").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::store
