// The set-up of the tests of the pull-through mirror and of the routes that serve it: a
// PullThroughCache over a real blob store in a temporary folder, fetching from a
// FakeFetcher under a fake clock. Header-only: its tests link the mirror themselves.
#ifndef FARM_TESTS_SUPPORT_PULL_THROUGH_FIXTURE_H_
#define FARM_TESTS_SUPPORT_PULL_THROUGH_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/mirror/pull_through.h"
#include "daemon/store/blob/blob_store.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"

namespace farm::testing {

class PullThroughFixture : public ::testing::Test {
 protected:
  // Opens the blob store, then a cache over options_ (staging in the temporary folder).
  void StartCache() {
    auto blobs = store::BlobStore::Open(tmp_.path() + "/blobs");
    ASSERT_OK(blobs.status());
    blobs_ = std::move(blobs).value();
    options_.staging_dir = tmp_.path() + "/staging";
    RestartCache();
  }
  // A new cache over the same blob store (a farmd restart of the mirror).
  void RestartCache() {
    cache_ = std::make_unique<mirror::PullThroughCache>(options_, &fetcher_, blobs_.get(), &clock_);
  }

  ScopedTempDir tmp_;
  FakeClock clock_;
  FakeFetcher fetcher_;
  std::unique_ptr<store::BlobStore> blobs_;
  mirror::MirrorOptions options_;
  std::unique_ptr<mirror::PullThroughCache> cache_;
  std::string wheel_;  // the bytes of the wheel the fetcher serves
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_PULL_THROUGH_FIXTURE_H_
