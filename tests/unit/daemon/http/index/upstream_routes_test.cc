// farmd's /upstream/ routes over a real PullThroughCache and blob store with a scripted
// upstream: pages in the format asked for with file URLs pointing back at the routes, the
// file from the blob store after one upstream download, corrupt bytes refused, and every
// hostile path answered 404 before it reaches the cache.
#include "daemon/http/index/upstream_routes.h"

#include <gtest/gtest.h>

#include "common/fs.h"
#include "common/sha256.h"
#include "daemon/mirror/pull_through.h"
#include "tests/support/pull_through_fixture.h"

namespace farm::http {
namespace {

const char kUp[] = "http://up/whl/cu128/";
const char kWheel[] = "envpkg-1.0-py3-none-any.whl";

class UpstreamRoutesTest : public farm::testing::PullThroughFixture {
 protected:
  void SetUp() override {
    wheel_ = std::string(50'000, 'w');
    Serve(wheel_);
    options_.indexes = {{"cu128", kUp}};
    options_.trees = {{"python", "http://py/"}};
    StartCache();
    deps_.blobs = blobs_.get();
    deps_.mirror = cache_.get();
  }

  // The upstream page lists `listed`'s digest; the file's bytes are wheel_.
  void Serve(const std::string& listed) {
    fetcher_.Serve(std::string(kUp) + "envpkg/",
                   R"({"meta": {"api-version": "1.1"}, "files": [{"filename": ")" +
                       std::string(kWheel) + R"(", "url": "../)" + kWheel +
                       R"(", "hashes": {"sha256": ")" + Sha256Hex(listed) + R"("}}]})",
                   "application/vnd.pypi.simple.v1+json");
    fetcher_.Serve(std::string(kUp) + kWheel, wheel_);
  }

  Response Get(const std::string& path, const std::string& accept = "") {
    Request req = MakeRequest("GET", path);
    req.accept = accept;
    auto r = HandleUpstream(deps_, req);
    EXPECT_TRUE(r.has_value()) << path;
    return r ? *r : Response{};
  }

  DashboardDeps deps_;
};

TEST_F(UpstreamRoutesTest, PageThenFileFromTheBlobStoreFetchedOnce) {
  Response page = Get("/upstream/pypi/cu128/simple/envpkg/", "application/vnd.pypi.simple.v1+json");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.content_type, "application/vnd.pypi.simple.v1+json");
  const std::string file = "/upstream/files/" + Sha256Hex(wheel_) + "/" + kWheel;
  EXPECT_NE(page.body.find(file), std::string::npos) << page.body;
  Response html = Get("/upstream/pypi/cu128/simple/envpkg/");
  EXPECT_EQ(html.content_type, "application/vnd.pypi.simple.v1+html");  // PEP 691 HTML
  for (int i = 0; i < 3; ++i) {
    Response r = Get(file);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.kind, BodyKind::kFile);
    auto bytes = fs::ReadFile(r.file_path);
    ASSERT_OK(bytes.status());
    EXPECT_EQ(*bytes, wheel_);
  }
  EXPECT_EQ(fetcher_.Count(std::string(kUp) + kWheel), 1);
}

TEST_F(UpstreamRoutesTest, CorruptUpstreamBytesAreRefusedAndNothingStored) {
  Serve(std::string(50'000, 'x'));  // the index lists another digest than the bytes have
  ASSERT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/").status, 200);
  const std::string sha = Sha256Hex(std::string(50'000, 'x'));
  Response r = Get("/upstream/files/" + sha + "/" + kWheel);
  EXPECT_EQ(r.status, 502) << r.body;  // a bad gateway: the worker retries, never blames the recipe
  EXPECT_NE(r.body.find("checksum mismatch for " + std::string(kWheel)), std::string::npos)
      << r.body;
  EXPECT_FALSE(blobs_->Contains(sha));
}

TEST_F(UpstreamRoutesTest, HostilePathsNeverReachTheCache) {
  const std::string sha = Sha256Hex(wheel_);
  for (const std::string& path : std::vector<std::string>{
           "/upstream/pypi/../simple/envpkg/", "/upstream/pypi/cu128/simple/../../etc/passwd",
           "/upstream/pypi/cu128/simple/", "/upstream/pypi/cu128/other/envpkg/",
           "/upstream/pypi/.hidden/simple/envpkg/", "/upstream/files/" + sha,
           "/upstream/files/" + sha + "/../x", "/upstream/files/NOTHEX/" + std::string(kWheel),
           "/upstream/files/" + sha + "/a/b.whl", "/upstream/tree/../x",
           "/upstream/tree/python/../../etc/passwd", "/upstream/nothing"}) {
    EXPECT_EQ(Get(path).status, 404) << path;
  }
  EXPECT_EQ(fetcher_.Total(), 0);
  EXPECT_FALSE(HandleUpstream(deps_, MakeRequest("GET", "/simple/envpkg/")).has_value());
  deps_.mirror = nullptr;
  EXPECT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/").status, 404);
}

}  // namespace
}  // namespace farm::http
