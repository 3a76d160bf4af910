// farmd's /upstream/ routes over a real PullThroughCache, blob store and SQLite store with
// a scripted upstream: pages in the format asked for with file URLs naming their index,
// the file from the blob store after one upstream download, corrupt bytes refused, every
// hostile path answered 404 before it reaches the cache, who may read and who may make
// farmd download (workers, admins and farmd's internal secret, as bearer tokens or HTTP
// Basic passwords), and no answer repeating an upstream URL's credentials.
#include "daemon/http/index/upstream_routes.h"

#include <gtest/gtest.h>

#include <future>

#include "common/fs.h"
#include "common/provenance/base64.h"
#include "common/sha256.h"
#include "daemon/auth/token_authority.h"
#include "daemon/mirror/internal_access.h"
#include "daemon/mirror/pull_through.h"
#include "tests/support/pull_through_fixture.h"

namespace farm::http {
namespace {

const char kUp[] = "http://up/whl/cu128/";
const char kPrivate[] = "http://produser:S3CR3TTOKEN@priv/idx/";
const char kWheel[] = "envpkg-1.0-py3-none-any.whl";

class UpstreamRoutesTest : public farm::testing::PullThroughFixture {
 protected:
  void SetUp() override {
    wheel_ = std::string(50'000, 'w');
    Serve(wheel_);
    options_.indexes = {{"cu128", kUp}, {"priv", kPrivate}};
    options_.trees = {{"python", "http://py/"}};
    StartCache();
    auth_ = std::make_unique<auth::TokenAuthority>(store_.get(), &clock_);
    internal_ = mirror::InternalAccess::Generate();
    deps_.blobs = blobs_.get();
    deps_.mirror = cache_.get();
    deps_.auth = auth_.get();
    deps_.internal = internal_.get();
    for (const char* role : {"admin", "viewer", "submitter"}) {
      auto token = auth_->Create(role, std::string(role) + "-1");
      ASSERT_OK(token.status());
      tokens_[role] = *token;
    }
    auto worker = auth_->Create("worker", "w-1", "w-1");
    ASSERT_OK(worker.status());
    tokens_["worker"] = *worker;
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

  Response Get(const std::string& path, const std::string& authorization = "",
               const std::string& accept = "", bool public_read = true) {
    Request req = MakeRequest("GET", path);
    req.accept = accept;
    req.authorization = authorization;
    std::promise<Response> answer;
    HandleUpstreamAsync(deps_, public_read, req, [&](Response r) { answer.set_value(r); });
    return answer.get_future().get();
  }
  std::string Bearer(const std::string& role) { return "Bearer " + tokens_[role]; }
  std::string File() { return "/upstream/files/cu128/" + Sha256Hex(wheel_) + "/" + kWheel; }

  std::unique_ptr<auth::TokenAuthority> auth_;
  std::shared_ptr<const mirror::InternalAccess> internal_;
  std::map<std::string, std::string> tokens_;
  DashboardDeps deps_;
};

TEST_F(UpstreamRoutesTest, PageThenFileFromTheBlobStoreFetchedOnce) {
  Response page =
      Get("/upstream/pypi/cu128/simple/envpkg/", "", "application/vnd.pypi.simple.v1+json");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.content_type, "application/vnd.pypi.simple.v1+json");
  EXPECT_NE(page.body.find(File()), std::string::npos) << page.body;
  Response html = Get("/upstream/pypi/cu128/simple/envpkg/");
  EXPECT_EQ(html.content_type, "application/vnd.pypi.simple.v1+html");  // PEP 691 HTML
  for (int i = 0; i < 3; ++i) {
    Response r = Get(File(), Bearer("worker"));
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.kind, BodyKind::kFile);
    EXPECT_NE(r.hold, nullptr);  // pinned against eviction while it is sent
    auto bytes = fs::ReadFile(r.file_path);
    ASSERT_OK(bytes.status());
    EXPECT_EQ(*bytes, wheel_);
  }
  EXPECT_EQ(fetcher_.Count(std::string(kUp) + kWheel), 1);
  // The old shape, a digest alone, serves nothing.
  EXPECT_EQ(Get("/upstream/files/" + Sha256Hex(wheel_) + "/" + kWheel).status, 404);
}

TEST_F(UpstreamRoutesTest, PipsThatReadMetadataOnlyFromHtmlAreAnsweredHtml) {
  for (auto [agent, type] : {std::pair{"pip/23.0.1 {\"installer\":{\"name\":\"pip\"}}", "v1+html"},
                             {"pip/22.3", "v1+html"},
                             {"pip/23.1", "v1+json"},
                             {"pip/24.2 {}", "v1+json"},
                             {"uv/0.5.1", "v1+json"},
                             {"", "v1+json"}}) {
    Request req = MakeRequest("GET", "/upstream/pypi/cu128/simple/envpkg/");
    req.accept =
        "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; "
        "q=0.1, text/html; q=0.01";
    req.user_agent = agent;
    std::promise<Response> answer;
    HandleUpstreamAsync(deps_, true, req, [&](Response r) { answer.set_value(r); });
    Response r = answer.get_future().get();
    ASSERT_EQ(r.status, 200) << agent;
    EXPECT_EQ(r.content_type, std::string("application/vnd.pypi.simple.") + type) << agent;
  }
}

TEST_F(UpstreamRoutesTest, WorkersAdminsAndFarmdItselfMayPullOthersReadWhatIsStored) {
  ASSERT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/").status, 200);
  for (const char* role : {"viewer", "submitter"}) {
    Response r = Get(File(), Bearer(role));
    EXPECT_EQ(r.status, 403) << role;
    EXPECT_NE(r.body.find("workers and admins"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Get(File()).status, 403);
  EXPECT_EQ(Get(File(), "Bearer farm_wor_notatoken0000").status, 401);
  EXPECT_EQ(fetcher_.Count(std::string(kUp) + kWheel), 0);
  // farmd's own pip: the secret as HTTP Basic's password.
  const std::string secret_url = *internal_->IndexUrl("http://h", "cu128");
  const std::string secret = secret_url.substr(13, secret_url.find('@') - 13);
  EXPECT_EQ(Get(File(), "Basic " + provenance::Base64Encode("farmd:" + secret)).status, 200);
  EXPECT_EQ(fetcher_.Count(std::string(kUp) + kWheel), 1);
  EXPECT_EQ(Get(File()).status, 200);  // stored: anyone who may read
  // An admin's token as pip sends it, and a worker's bearer token, pull too.
  Serve(wheel_);
  ASSERT_OK(Page("cu128", "envpkg").status());
  EXPECT_EQ(Get(File(), "Basic " + provenance::Base64Encode("admin:" + tokens_["admin"])).status,
            200);
}

TEST_F(UpstreamRoutesTest, PrivateReadsNeedATokenAndAWorkersWillDo) {
  EXPECT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/", "", "", false).status, 401);
  for (const char* role : {"viewer", "worker", "admin"}) {
    EXPECT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/", Bearer(role), "", false).status, 200)
        << role;
  }
  EXPECT_EQ(Get(File(), Bearer("worker"), "", false).status, 200);
  EXPECT_EQ(Get(File(), "Bearer " + tokens_["viewer"], "", false).status, 200);  // stored now
}

TEST_F(UpstreamRoutesTest, NoAnswerRepeatsAnUpstreamsCredentials) {
  fetcher_.Fail(
      "http://produser:S3CR3TTOKEN@priv/idx/nonexist/",
      Status::NotFound("http://produser:S3CR3TTOKEN@priv/idx/nonexist/ answered HTTP 404"));
  fetcher_.Fail("http://produser:S3CR3TTOKEN@priv/idx/down/",
                Status::Unavailable("http://produser:S3CR3TTOKEN@priv/idx/down/: refused"));
  for (const char* project : {"nonexist", "down"}) {
    Response r = Get(std::string("/upstream/pypi/priv/simple/") + project + "/");
    EXPECT_NE(r.status, 200) << project;
    EXPECT_EQ(r.body.find("S3CR3TTOKEN"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("produser"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("[REDACTED]@priv"), std::string::npos) << r.body;
  }
}

TEST_F(UpstreamRoutesTest, CorruptUpstreamBytesAreRefusedAndNothingStored) {
  Serve(std::string(50'000, 'x'));  // the index lists another digest than the bytes have
  ASSERT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/").status, 200);
  const std::string sha = Sha256Hex(std::string(50'000, 'x'));
  Response r = Get("/upstream/files/cu128/" + sha + "/" + kWheel, Bearer("worker"));
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
           "/upstream/pypi/.hidden/simple/envpkg/", "/upstream/files/cu128/" + sha,
           "/upstream/files/cu128/" + sha + "/../x",
           std::string("/upstream/files/cu128/NOTHEX/") + kWheel,
           "/upstream/files/cu128/" + sha + "/a/b.whl", "/upstream/files/../" + sha + "/x.whl",
           "/upstream/files/cu999/" + sha + "/" + kWheel, "/upstream/tree/../x",
           "/upstream/tree/python/../../etc/passwd", "/upstream/nothing"}) {
    EXPECT_EQ(Get(path, Bearer("worker")).status, 404) << path;
  }
  EXPECT_EQ(fetcher_.Total(), 0);
  Request post = MakeRequest("POST", "/upstream/pypi/cu128/simple/envpkg/");
  std::promise<Response> answer;
  HandleUpstreamAsync(deps_, true, post, [&](Response r) { answer.set_value(r); });
  EXPECT_EQ(answer.get_future().get().status, 405);
  EXPECT_FALSE(IsUpstreamRequest(MakeRequest("GET", "/simple/envpkg/")));
  deps_.mirror = nullptr;
  EXPECT_EQ(Get("/upstream/pypi/cu128/simple/envpkg/").status, 404);
}

}  // namespace
}  // namespace farm::http
