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

TEST(BlobStoreTest, AFailedCheckKeepsTheBlobOutAndRemoveDeletesOne) {
  testing::ScopedTempDir dir;
  auto blobs = BlobStore::Open(dir.path());
  std::string sha = Sha256Hex("source");
  auto w = blobs.value()->BeginWrite(6, sha);
  ASSERT_OK(w.value()->Append("source"));
  std::string seen;
  Status s = w.value()->Commit([&](const std::string& path) {
    seen = fs::ReadFile(path).value();
    return Status::InvalidArgument("path-dotdot: ../x: '..' component");
  });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seen, "source");
  EXPECT_FALSE(blobs.value()->Contains(sha));
  auto again = blobs.value()->BeginWrite(6, sha);
  ASSERT_OK(again.value()->Append("source"));
  ASSERT_OK(again.value()->Commit([](const std::string&) { return Status::Ok(); }));
  EXPECT_TRUE(blobs.value()->Contains(sha));
  ASSERT_OK(blobs.value()->Remove(sha));
  EXPECT_FALSE(blobs.value()->Contains(sha));
  EXPECT_OK(blobs.value()->Remove(sha));  // already gone
  EXPECT_EQ(blobs.value()->Remove("../../etc").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::store
