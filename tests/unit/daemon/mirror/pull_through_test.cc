#include "daemon/mirror/pull_through.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/sha256.h"
#include "tests/support/pull_through_fixture.h"

namespace farm::mirror {
namespace {

const char kUp[] = "http://up/whl/cu128/";
const char kWheel[] = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";
const char kWheelUrl[] =
    "http://up/whl/cu128/torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl";

class PullThroughTest : public farm::testing::PullThroughFixture {
 protected:
  void SetUp() override {
    wheel_ = std::string(100'000, 'w');
    fetcher_.block_size = 4096;
    fetcher_.Serve(
        std::string(kUp) + "torch/",
        R"({"meta": {"api-version": "1.1"}, "files": [{"filename": ")" + std::string(kWheel) +
            R"(", "url": "../torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl", )"
            R"("hashes": {"sha256": ")" +
            Sha256Hex(wheel_) +
            R"("}, "size": 100000, )"
            R"("requires-python": ">=3.9"}, {"filename": "torch-2.8.0.tar.gz", "url": "x"}]})",
        "application/vnd.pypi.simple.v1+json");
    fetcher_.Serve(kWheelUrl, wheel_);
    options_.indexes = {{"cu128", kUp}};
    options_.trees = {{"redist", "http://nv/redist/"}};
    StartCache();
  }
};

TEST_F(PullThroughTest, PagesPointAtTheFarmAndKeepHashes) {
  auto page = Page("cu128", "Torch");
  ASSERT_OK(page.status());
  EXPECT_EQ(page->content_type, "application/vnd.pypi.simple.v1+json");
  std::string sha = Sha256Hex(wheel_);
  EXPECT_NE(page->body.find("\"url\":\"/mirror/cu128/files/" + sha +
                            "/torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl\""),
            std::string::npos)
      << page->body;
  EXPECT_NE(page->body.find("\"sha256\":\"" + sha + "\""), std::string::npos);
  EXPECT_NE(page->body.find("\"requires-python\":\">=3.9\""), std::string::npos);
  EXPECT_EQ(page->body.find("tar.gz"), std::string::npos);  // no hash: not served
  auto html = Page("cu128", "torch", false);
  ASSERT_OK(html.status());
  EXPECT_NE(html->body.find("#sha256=" + sha + "\""), std::string::npos);
  EXPECT_NE(html->body.find("data-requires-python=\"&gt;=3.9\""), std::string::npos);
  // Parsed back by the workers' own client, the page names the same file and digest.
  auto files = upstream::ParseProjectJson(page->body, "http://farm/mirror/cu128/simple/torch/");
  ASSERT_OK(files.status());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].sha256, sha);
  EXPECT_EQ(fetcher_.Count(std::string(kUp) + "torch/"), 1);  // the second page was cached
  clock_.Advance(options_.page_ttl_ms + 1);
  ASSERT_OK(Page("cu128", "torch").status());
  EXPECT_EQ(fetcher_.Count(std::string(kUp) + "torch/"), 2);
  EXPECT_EQ(Page("cu999", "torch").status().code(), StatusCode::kNotFound);
}

TEST_F(PullThroughTest, AFreshPageIsAskedForWithItsEtagAndANewReleaseIsListedAtOnce) {
  const std::string page = std::string(kUp) + "torch/";
  ASSERT_OK(Page("cu128", "torch").status());
  // Within the page's lifetime a plain request is answered from the kept page...
  ASSERT_OK(Page("cu128", "torch").status());
  EXPECT_EQ(fetcher_.Count(page), 1);
  // ...and one that asks for a fresh page revalidates it: unchanged, a 304.
  ASSERT_OK(Page("cu128", "torch", true, /*revalidate=*/true).status());
  EXPECT_EQ(fetcher_.Count(page), 2);
  EXPECT_EQ(fetcher_.NotModified(page), 1);
  // A release published a moment ago is listed on the next fresh request.
  const std::string newer = "torch-2.9.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";
  fetcher_.Serve(page,
                 R"({"meta": {"api-version": "1.1"}, "files": [{"filename": ")" + newer +
                     R"(", "url": "../x.whl", "hashes": {"sha256": ")" + std::string(64, 'e') +
                     R"("}}]})",
                 "application/vnd.pypi.simple.v1+json");
  auto fresh = Page("cu128", "torch", true, /*revalidate=*/true);
  ASSERT_OK(fresh.status());
  EXPECT_NE(fresh->body.find(newer), std::string::npos) << fresh->body;
  EXPECT_EQ(fetcher_.NotModified(page), 1);
}

TEST_F(PullThroughTest, ManyWorkersOneUpstreamDownload) {
  ASSERT_OK(Page("cu128", "torch").status());
  std::string sha = Sha256Hex(wheel_);
  std::vector<std::thread> workers;
  std::vector<Status> results(10);
  for (int i = 0; i < 10; ++i) {
    workers.emplace_back([&, i] { results[i] = FileOf("cu128", sha, kWheel).status(); });
  }
  for (std::thread& t : workers) t.join();
  for (const Status& s : results) EXPECT_OK(s);
  EXPECT_EQ(fetcher_.Count(kWheelUrl), 1);
  EXPECT_EQ(cache_->upstream_downloads(), 1);
  EXPECT_TRUE(blobs_->Contains(sha));
  EXPECT_OK(FileOf("cu128", sha, kWheel).status());
  EXPECT_EQ(fetcher_.Count(kWheelUrl), 1);
}

TEST_F(PullThroughTest, CorruptUpstreamIsRefusedAndNothingStored) {
  ASSERT_OK(Page("cu128", "torch").status());
  std::string sha = Sha256Hex(wheel_);
  std::string bad = wheel_;
  bad[500] = 'X';
  fetcher_.Serve(kWheelUrl, bad);
  Status s = FileOf("cu128", sha, kWheel).status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("checksum mismatch for " + std::string(kWheel)), std::string::npos);
  EXPECT_FALSE(blobs_->Contains(sha));
  fetcher_.Serve(kWheelUrl, wheel_);
  EXPECT_OK(FileOf("cu128", sha, kWheel).status());
  EXPECT_EQ(FileOf("cu128", std::string(64, 'f'), kWheel).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FileOf("cu128", "../../etc/passwd", kWheel).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(PullThroughTest, OfflineFarmServesPreloadedFiles) {
  std::string sha = Sha256Hex(wheel_);
  auto writer = blobs_->BeginWrite(static_cast<int64_t>(wheel_.size()), sha);
  ASSERT_OK(writer.status());
  ASSERT_OK((*writer)->Append(wheel_));
  ASSERT_OK((*writer)->Commit());
  ASSERT_OK(cache_->AddPreloaded("cu128", PreloadKind::kIndexFile, kWheel, sha,
                                 static_cast<int64_t>(wheel_.size())));
  fetcher_.Fail(std::string(kUp) + "torch/", Status::Unavailable("no network"));
  auto page = Page("cu128", "torch");
  ASSERT_OK(page.status());
  EXPECT_NE(page->body.find(sha), std::string::npos);
  EXPECT_OK(FileOf("cu128", sha, kWheel).status());
  EXPECT_EQ(fetcher_.Count(kWheelUrl), 0);
  EXPECT_EQ(Page("cu128", "numpy").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache_
                ->AddPreloaded("cu128", PreloadKind::kIndexFile, "x-1.0-py3-none-any.whl",
                               std::string(64, 'e'), 1)
                .code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(PullThroughTest, TreesLearnArchivesFromManifests) {
  std::string archive = "nvcc archive bytes";
  fetcher_.Serve("http://nv/redist/", "<a href=\"redistrib_13.0.2.json\">", "text/html");
  fetcher_.Serve(
      "http://nv/redist/redistrib_13.0.2.json",
      R"({"release_label": "13.0.2", "cuda_nvcc": {"version": "13.0.88", "linux-x86_64": )"
      R"({"relative_path": "cuda_nvcc/linux-x86_64/n.tar.xz", "sha256": ")" +
          Sha256Hex(archive) + R"(", "size": "18"}}})",
      "application/json");
  fetcher_.Serve("http://nv/redist/cuda_nvcc/linux-x86_64/n.tar.xz", archive);
  EXPECT_EQ(cache_->TreeFile("redist", "cuda_nvcc/linux-x86_64/n.tar.xz").status().code(),
            StatusCode::kNotFound);  // not listed yet
  auto listing = cache_->TreeFile("redist", "");
  ASSERT_OK(listing.status());
  EXPECT_EQ(listing->content_type, "text/html");
  auto manifest = cache_->TreeFile("redist", "redistrib_13.0.2.json");
  ASSERT_OK(manifest.status());
  EXPECT_NE(manifest->body.find("13.0.88"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    auto file = cache_->TreeFile("redist", "cuda_nvcc/linux-x86_64/n.tar.xz");
    ASSERT_OK(file.status());
    EXPECT_EQ(file->blob_sha256, Sha256Hex(archive));
    EXPECT_EQ(file->size, 18);
  }
  EXPECT_EQ(fetcher_.Count("http://nv/redist/cuda_nvcc/linux-x86_64/n.tar.xz"), 1);
  EXPECT_EQ(fetcher_.Count("http://nv/redist/redistrib_13.0.2.json"), 1);
  EXPECT_EQ(cache_->TreeFile("redist", "../secret").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache_->TreeFile("other", "").status().code(), StatusCode::kNotFound);
}

TEST_F(PullThroughTest, PreloadedFilesAreMergedWithUpstreamsListingWhichWinsOnAClash) {
  const std::string kOther = "torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl";
  std::string other = PutBlob("another torch");
  ASSERT_OK(cache_->AddPreloaded("cu128", PreloadKind::kIndexFile, kOther, other, 13));
  // The same name as upstream's file with other bytes: upstream's entry is served.
  std::string clash = PutBlob("not upstream's torch");
  ASSERT_OK(cache_->AddPreloaded("cu128", PreloadKind::kIndexFile, kWheel, clash, 20));
  auto page = Page("cu128", "torch");
  ASSERT_OK(page.status());
  auto files = upstream::ParseProjectJson(page->body, "http://farm/mirror/cu128/simple/torch/");
  ASSERT_OK(files.status());
  ASSERT_EQ(files->size(), 2u) << page->body;
  EXPECT_EQ((*files)[0].sha256, Sha256Hex(wheel_));
  EXPECT_EQ((*files)[1].filename, kOther);
  EXPECT_EQ((*files)[1].sha256, other);
  // A project upstream has never heard of (404) is served from the preloads alone.
  std::string numpy = PutBlob(std::string("PK\x03\x04", 4));
  ASSERT_OK(cache_->AddPreloaded("cu128", PreloadKind::kIndexFile, "numpy-2.0.0.tar.gz", numpy, 4));
  page = Page("cu128", "NumPy", false);
  ASSERT_OK(page.status());
  EXPECT_NE(page->body.find("numpy-2.0.0.tar.gz"), std::string::npos) << page->body;
  // Only sources farmd serves, and only names that are distributions.
  EXPECT_EQ(cache_->AddPreloaded("cu999", PreloadKind::kIndexFile, kOther, other, 13).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(cache_->AddPreloaded("cu128", PreloadKind::kIndexFile, "x.txt", other, 13).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cache_->AddPreloaded("redist", PreloadKind::kArchive, "../x", other, 13).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(PullThroughTest, PreloadedManifestsAreLinkedFromTheTreesListing) {
  std::string manifest = PutBlob("{}");
  ASSERT_OK(
      cache_->AddPreloaded("redist", PreloadKind::kManifest, "redistrib_12.8.1.json", manifest, 2));
  fetcher_.Serve("http://nv/redist/",
                 "<html><body><a href=\"redistrib_13.0.2.json\">x</a>"
                 "</body></html>",
                 "text/html");
  auto listing = cache_->TreeFile("redist", "");
  ASSERT_OK(listing.status());
  EXPECT_NE(listing->body.find("href=\"redistrib_13.0.2.json\""), std::string::npos);
  EXPECT_NE(listing->body.find("href=\"redistrib_12.8.1.json\""), std::string::npos)
      << listing->body;
  // Offline, with no listing ever seen: the preloaded manifests alone.
  RestartCache();
  ASSERT_OK(
      cache_->AddPreloaded("redist", PreloadKind::kManifest, "redistrib_12.8.1.json", manifest, 2));
  fetcher_.Fail("http://nv/redist/", Status::Unavailable("no network"));
  listing = cache_->TreeFile("redist", "");
  ASSERT_OK(listing.status());
  EXPECT_NE(listing->body.find("href=\"redistrib_12.8.1.json\""), std::string::npos)
      << listing->body;
  EXPECT_EQ(listing->body.find("13.0.2"), std::string::npos);
}

}  // namespace
}  // namespace farm::mirror
