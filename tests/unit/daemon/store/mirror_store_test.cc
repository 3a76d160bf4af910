// What the pull-through cache downloaded (migration 025), on SQLite and, in store_pg_test,
// on PostgreSQL: a blob is recorded once with every name its sources listed it under, its
// last use only moves forward, the least recently used come first, the METADATA kept with
// a wheel is read back, and forgetting a blob says whether the farm still names its bytes
// otherwise (a source archive, a preload), which also keeps a source archive the mirror
// holds from being collected.
#include "daemon/store/mirror_store.h"

#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class MirrorStoreTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    mirror_ = AsMirrorStore(store_.get());
    ASSERT_NE(mirror_, nullptr);
  }

  static MirrorBlobRow Blob(char digit, int64_t size, const std::string& source, int64_t at) {
    return MirrorBlobRow{.sha256 = std::string(64, digit),
                         .size = size,
                         .source = source,
                         .fetched_ms = at,
                         .last_used_ms = at};
  }

  MirrorStore* mirror_ = nullptr;
};

TEST_F(MirrorStoreTest, BlobsAreRecordedOnceWithEveryNameAndUsedOldestFirst) {
  MirrorBlobRow wheel = Blob('a', 1000, "cu128", 100);
  wheel.metadata_sha256 = std::string(64, 'm');
  auto fresh = mirror_->RecordMirrorFile(wheel, "x-1.0-py3-none-any.whl", "Name: x\n");
  ASSERT_OK(fresh.status());
  EXPECT_TRUE(*fresh);
  // The same bytes listed by another index: a second name, not a second blob.
  fresh = mirror_->RecordMirrorFile(Blob('a', 1000, "cu130", 50), "x-1.0-py3-none-any.whl", "");
  ASSERT_OK(fresh.status());
  EXPECT_FALSE(*fresh);
  ASSERT_OK(mirror_->RecordMirrorFile(Blob('b', 30, "redist", 200), "a/b.tar.xz", "").status());
  auto bytes = mirror_->MirrorBytes();
  ASSERT_OK(bytes.status());
  EXPECT_EQ(*bytes, 1030);

  auto files = mirror_->ListMirrorFiles();
  ASSERT_OK(files.status());
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ(files->at(0).source, "cu128");
  EXPECT_EQ(files->at(0).metadata_sha256, std::string(64, 'm'));
  EXPECT_EQ(files->at(1).source, "cu130");
  EXPECT_EQ(files->at(1).size, 1000);
  EXPECT_EQ(files->at(2).filename, "a/b.tar.xz");

  // The first blob was recorded at 100 (the later record at 50 did not move it back).
  auto by_use = mirror_->ListMirrorBlobsByUse(10);
  ASSERT_OK(by_use.status());
  ASSERT_EQ(by_use->size(), 2u);
  EXPECT_EQ(by_use->at(0).sha256, std::string(64, 'a'));
  EXPECT_EQ(by_use->at(0).last_used_ms, 100);
  EXPECT_EQ(by_use->at(0).source, "cu128");
  ASSERT_OK(mirror_->TouchMirrorBlobs({{std::string(64, 'a'), 300},
                                       {std::string(64, 'a'), 250},     // never backwards
                                       {std::string(64, 'c'), 400}}));  // no row: skipped
  by_use = mirror_->ListMirrorBlobsByUse(1);
  ASSERT_OK(by_use.status());
  ASSERT_EQ(by_use->size(), 1u);
  EXPECT_EQ(by_use->at(0).sha256, std::string(64, 'b'));
  files = mirror_->ListMirrorFiles();
  ASSERT_OK(files.status());
  EXPECT_EQ(files->size(), 3u);  // touching made no row

  auto metadata = mirror_->GetMirrorMetadata(std::string(64, 'a'));
  ASSERT_OK(metadata.status());
  ASSERT_TRUE(metadata->has_value());
  EXPECT_EQ(**metadata, "Name: x\n");
  metadata = mirror_->GetMirrorMetadata(std::string(64, 'b'));
  ASSERT_OK(metadata.status());
  EXPECT_FALSE(metadata->has_value());
}

TEST_F(MirrorStoreTest, ForgettingSaysWhetherTheFarmStillNamesTheBytes) {
  ASSERT_OK(mirror_->RecordMirrorFile(Blob('a', 10, "cu128", 1), "a-1.0.tar.gz", "").status());
  ASSERT_OK(mirror_->RecordMirrorFile(Blob('b', 20, "cu128", 2), "b-1.0.tar.gz", "").status());
  ASSERT_OK(mirror_->RecordMirrorFile(Blob('c', 30, "cu128", 3), "c-1.0.tar.gz", "").status());
  // 'a' is also a submitter's source archive, 'b' a preloaded file; 'c' only the mirror's.
  ASSERT_OK(store_->RecordSourceArchive(
      {.sha256 = std::string(64, 'a'), .size = 10, .created_ms = 1, .last_used_ms = 1}));
  ASSERT_OK(store_
                ->RecordUpstreamPreload({.source = "cu128",
                                         .path = "b-1.0.tar.gz",
                                         .kind = "index-file",
                                         .sha256 = std::string(64, 'b'),
                                         .size = 20,
                                         .added_by = "admin",
                                         .created_ms = 1})
                .status());
  // An old, unused source archive the mirror holds is not collectable.
  auto collectable = store_->ListCollectableSources(1'000'000, 10);
  ASSERT_OK(collectable.status());
  EXPECT_TRUE(collectable->empty());

  for (auto [digit, named] : {std::pair{'a', true}, {'b', true}, {'c', false}}) {
    auto forgot = mirror_->ForgetMirrorBlob(std::string(64, digit));
    ASSERT_OK(forgot.status());
    EXPECT_EQ(*forgot, named) << digit;
  }
  EXPECT_EQ(mirror_->ForgetMirrorBlob(std::string(64, 'c')).status().code(), StatusCode::kNotFound);
  auto files = mirror_->ListMirrorFiles();
  ASSERT_OK(files.status());
  EXPECT_TRUE(files->empty());
  auto bytes = mirror_->MirrorBytes();
  ASSERT_OK(bytes.status());
  EXPECT_EQ(*bytes, 0);
  collectable = store_->ListCollectableSources(1'000'000, 10);
  ASSERT_OK(collectable.status());
  EXPECT_EQ(collectable->size(), 1u);  // forgotten by the mirror: the archive is collectable
}

}  // namespace
}  // namespace farm::store
