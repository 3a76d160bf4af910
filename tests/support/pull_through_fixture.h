// The set-up of the tests of the pull-through mirror and of the routes that serve it: a
// PullThroughCache over a real blob store and a real SQLite store (its accounting) in a
// temporary folder, fetching from a FakeFetcher under a fake clock. Header-only: its tests
// link the mirror and the store themselves.
#ifndef FARM_TESTS_SUPPORT_PULL_THROUGH_FIXTURE_H_
#define FARM_TESTS_SUPPORT_PULL_THROUGH_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/sha256.h"
#include "daemon/mirror/pull_through.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/mirror_store.h"
#include "daemon/store/store.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"

namespace farm::testing {

class PullThroughFixture : public ::testing::Test {
 protected:
  // Opens the blob store and the store, then a cache over options_ (staging in the
  // temporary folder).
  void StartCache() {
    auto blobs = store::BlobStore::Open(tmp_.path() + "/blobs");
    ASSERT_OK(blobs.status());
    blobs_ = std::move(blobs).value();
    auto db = store::OpenSqliteStore(tmp_.path() + "/farm.db");
    ASSERT_OK(db.status());
    store_ = std::move(db).value();
    options_.staging_dir = tmp_.path() + "/staging";
    RestartCache();
  }
  // A new cache over the same blob store and store (a farmd restart of the mirror).
  void RestartCache() {
    cache_.reset();
    cache_ = std::make_unique<mirror::PullThroughCache>(
        options_, &fetcher_, blobs_.get(), store::AsMirrorStore(store_.get()), &clock_);
    ASSERT_OK(cache_->Start());
  }

  Result<mirror::MirrorAnswer> Page(const std::string& index, const std::string& project,
                                    bool json = true, bool revalidate = false) {
    return cache_->IndexPage({.index = index,
                              .project = project,
                              .json = json,
                              .files_base = "/mirror/" + index + "/files/",
                              .revalidate = revalidate});
  }
  Result<mirror::MirrorAnswer> FileOf(const std::string& index, const std::string& sha256,
                                      const std::string& filename, bool may_pull = true,
                                      bool metadata = false) {
    return cache_->File({.index = index,
                         .sha256 = sha256,
                         .filename = filename,
                         .metadata = metadata,
                         .may_pull = may_pull});
  }

  // Stores `bytes` as a blob, not through the mirror (a preload's, or the farm's own);
  // returns its sha256.
  std::string PutBlob(const std::string& bytes) {
    std::string sha = Sha256Hex(bytes);
    auto writer = blobs_->BeginWrite(static_cast<int64_t>(bytes.size()), sha);
    EXPECT_OK(writer.status());
    EXPECT_OK((*writer)->Append(bytes));
    EXPECT_OK((*writer)->Commit());
    return sha;
  }

  ScopedTempDir tmp_;
  FakeClock clock_;
  FakeFetcher fetcher_;
  std::unique_ptr<store::BlobStore> blobs_;
  std::unique_ptr<store::Store> store_;
  mirror::MirrorOptions options_;
  std::unique_ptr<mirror::PullThroughCache> cache_;
  std::string wheel_;  // the bytes of the wheel the fetcher serves
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_PULL_THROUGH_FIXTURE_H_
