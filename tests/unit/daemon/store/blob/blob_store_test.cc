#include "daemon/store/blob/blob_store.h"

#include <ctime>

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
  EXPECT_EQ(fs::ReadFile(blobs.value()->LocalPath(sha).value()).value(), data);
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

TEST(BlobStoreTest, ReadsFromAnOffsetAndRefusesOffsetsPastTheEnd) {
  testing::ScopedTempDir dir;
  auto blobs = BlobStore::Open(dir.path()).value();
  std::string data = "0123456789";
  std::string sha = Sha256Hex(data);
  EXPECT_EQ(blobs->OpenRead(sha).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(blobs->LocalPath(sha).status().code(), StatusCode::kNotFound);
  auto w = blobs->BeginWrite(10, sha).value();
  ASSERT_OK(w->Append(data));
  ASSERT_OK(w->Commit());
  EXPECT_EQ(w->Commit().code(), StatusCode::kFailedPrecondition);
  auto reader = blobs->OpenRead(sha, 4);
  ASSERT_OK(reader.status());
  EXPECT_EQ((*reader)->size(), 10);
  std::string got, chunk;
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK((*reader)->Read(4, &chunk));
    if (chunk.empty()) break;
    got += chunk;
  }
  EXPECT_EQ(got, "456789");
  auto at_end = blobs->OpenRead(sha, 10);
  ASSERT_OK(at_end.status());
  ASSERT_OK((*at_end)->Read(4, &chunk));
  EXPECT_TRUE(chunk.empty());
  for (int64_t bad : {int64_t{-1}, int64_t{11}, INT64_MAX}) {
    EXPECT_EQ(blobs->OpenRead(sha, bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(blobs->PresignedUrl(sha, "x.whl", 60).status().code(), StatusCode::kUnimplemented);
}

TEST(BlobStoreTest, ASweepRemovesWhatACrashedUploadLeftAndKeepsOneInProgress) {
  testing::ScopedTempDir dir;
  auto blobs = BlobStore::Open(dir.path() + "/cas");
  ASSERT_OK(blobs.status());
  // What a farmd killed mid-upload leaves: a partial file in tmp/ that nobody holds.
  std::string orphan = dir.path() + "/cas/tmp/" + std::string(64, 'a') + ".0badc0de";
  ASSERT_OK(fs::WriteFileAtomic(orphan, std::string(4096, 'p'), 0600));
  std::string data = "an upload going on meanwhile";
  std::string sha = Sha256Hex(data);
  auto w = blobs.value()->BeginWrite(static_cast<int64_t>(data.size()), sha);
  ASSERT_OK(w.status());
  ASSERT_OK(w.value()->Append("an upload "));
  auto swept = blobs.value()->SweepTemporaryFiles(::time(nullptr));
  ASSERT_OK(swept.status());
  EXPECT_EQ(swept->files, 1);
  EXPECT_EQ(swept->bytes, 4096);
  EXPECT_FALSE(fs::Exists(orphan));
  ASSERT_OK(w.value()->Append("going on meanwhile"));
  ASSERT_OK(w.value()->Commit());
  EXPECT_TRUE(blobs.value()->Contains(sha));
  w.value().reset();
  EXPECT_EQ(blobs.value()->SweepTemporaryFiles(::time(nullptr))->files, 0);
}

}  // namespace
}  // namespace farm::store
