#include <set>

#include "common/fs.h"
#include "common/sha256.h"
#include "daemon/http/index/index_catalog.h"
#include "daemon/http/index/simple_index.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

constexpr char kMetadata[] =
    "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0\nRequires-Python: >=3.9\n\nbody\n";

TEST(NegotiationTest, PicksByQualityThenJson) {
  EXPECT_TRUE(NegotiateIndexFormat("").acceptable);
  EXPECT_FALSE(NegotiateIndexFormat("").json);
  // pip's header.
  Negotiated pip = NegotiateIndexFormat(
      "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, "
      "text/html; q=0.01");
  EXPECT_TRUE(pip.json);
  EXPECT_EQ(pip.content_type, kJsonV1);
  Negotiated html = NegotiateIndexFormat("application/vnd.pypi.simple.v1+json;q=0.2, text/html");
  EXPECT_FALSE(html.json);
  EXPECT_EQ(html.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(NegotiateIndexFormat("application/vnd.pypi.simple.latest+html").content_type, kHtmlV1);
  EXPECT_TRUE(NegotiateIndexFormat("application/vnd.pypi.simple.latest+json").json);
  EXPECT_TRUE(NegotiateIndexFormat("*/*").acceptable);
  EXPECT_FALSE(NegotiateIndexFormat("application/xml").acceptable);
  EXPECT_FALSE(NegotiateIndexFormat("text/html;q=0").acceptable);
}

TEST(WheelNameTest, NamesVersionsAndMetadata) {
  auto nv = WheelNameVersion("attn_example-1.0+cu130-cp311-cp311-linux_x86_64.whl");
  ASSERT_OK(nv.status());
  EXPECT_EQ(nv->first, "attn_example");
  EXPECT_EQ(nv->second, "1.0+cu130");
  EXPECT_FALSE(WheelNameVersion("attn_example-1.0.tar.gz").ok());
  EXPECT_FALSE(WheelNameVersion("a-b-c.whl").ok());
  EXPECT_EQ(RequiresPython(kMetadata), ">=3.9");
  EXPECT_EQ(RequiresPython("Name: x\n\nRequires-Python: >=3\n"), "");  // only headers count
}

class IndexTest : public HttpFixture {
 protected:
  // Adds a succeeded job of (cuda, torch) with one wheel in the given validation state.
  std::string Wheel(const std::string& filename, const std::string& cuda, const std::string& torch,
                    int validation) {
    return AddFinishedWheel(cuda, torch, filename, kMetadata, validation);
  }
};

TEST_F(IndexTest, ListsOnlyValidatedWheelsPerVariant) {
  std::string a =
      Wheel("attn_example-1.0+cu130-py3-none-any.whl", "13.0", "", farm::v1::VALIDATION_PASSED);
  std::string b =
      Wheel("attn_example-1.0+cu128-py3-none-any.whl", "12.8", "2.8", farm::v1::VALIDATION_PASSED);
  Wheel("attn_example-2.0+cu130-py3-none-any.whl", "13.0", "", farm::v1::VALIDATION_FAILED);
  std::string p = Wheel("attn_example-3.0+cu130-py3-none-any.whl", "13.0", "",
                        farm::v1::VALIDATION_PENDING_HARDWARE);
  Router r = MakeRouter();
  auto all = Json(Get(r, "/simple/attn-example/", kJsonV1));
  EXPECT_EQ(all.at("meta").at("api-version").as_string(), "1.3");
  EXPECT_EQ(all.at("files").as_array().size(), 2u);
  auto cu130 = Json(Get(r, "/cu130/simple/attn-example/", kJsonV1));
  const auto& files = cu130.at("files").as_array();
  ASSERT_EQ(files.size(), 1u);
  const auto& f = files[0].as_object();
  EXPECT_EQ(f.at("filename").as_string(), "attn_example-1.0+cu130-py3-none-any.whl");
  EXPECT_EQ(f.at("url").as_string(), "/files/" + a + "/attn_example-1.0+cu130-py3-none-any.whl");
  EXPECT_EQ(f.at("hashes").at("sha256").as_string(), a);
  EXPECT_EQ(f.at("requires-python").as_string(), ">=3.9");
  EXPECT_EQ(f.at("core-metadata").at("sha256").as_string(), Sha256Hex(kMetadata));
  EXPECT_GT(f.at("size").as_int64(), 0);
  EXPECT_EQ(cu130.at("versions").as_array().size(), 1u);
  auto torch = Json(Get(r, "/cu128-torch2.8/simple/attn-example/", kJsonV1));
  EXPECT_EQ(torch.at("files").as_array()[0].at("hashes").at("sha256").as_string(), b);
  EXPECT_EQ(Get(r, "/cu999/simple/").status, 404);

  DashboardOptions pending;
  pending.index_include_pending = true;
  Router rp = MakeRouter(pending);
  auto with = Json(Get(rp, "/cu130/simple/attn-example/", kJsonV1));
  ASSERT_EQ(with.at("files").as_array().size(), 2u);
  EXPECT_EQ(with.at("files").as_array()[1].at("hashes").at("sha256").as_string(), p);
}

TEST_F(IndexTest, SageattentionAndSageattn3AreDistinctProjects) {
  // The seeds' name clash: SageAttention 2 ships as `sageattention`, SageAttention3 as
  // `sageattn3`; neither page may offer the other's wheels, whatever the spelling asked.
  struct Dist {
    std::string file, metadata;
  };
  const Dist dists[] = {
      {"sageattention-2.2.0+cu130torch2.11.sm90a-cp311-cp311-linux_x86_64.whl",
       "Metadata-Version: 2.1\nName: sageattention\nVersion: 2.2.0+cu130torch2.11.sm90a\n"},
      {"sageattn3-1.0.0+cu130torch2.11.sm120a-cp311-cp311-linux_x86_64.whl",
       "Metadata-Version: 2.1\nName: sageattn3\nVersion: 1.0.0+cu130torch2.11.sm120a\n"},
  };
  for (const Dist& d : dists) {
    AddFinishedWheel("13.0", "2.11", d.file, d.metadata, farm::v1::VALIDATION_PASSED);
  }
  Router r = MakeRouter();
  auto root = Json(Get(r, "/simple/", kJsonV1));
  std::set<std::string> projects;
  for (const auto& p : root.at("projects").as_array()) {
    projects.insert(std::string(p.at("name").as_string()));
  }
  EXPECT_TRUE(projects.count("sageattention") && projects.count("sageattn3"));
  for (const char* page : {"/simple/sageattention/", "/cu130-torch2.11/simple/sageattention/"}) {
    auto files = Json(Get(r, page, kJsonV1)).at("files").as_array();
    ASSERT_EQ(files.size(), 1u) << page;
    EXPECT_EQ(files[0].at("filename").as_string(), dists[0].file) << page;
  }
  for (const char* page : {"/simple/sageattn3/", "/cu130-torch2.11/simple/sageattn3/"}) {
    auto files = Json(Get(r, page, kJsonV1)).at("files").as_array();
    ASSERT_EQ(files.size(), 1u) << page;
    EXPECT_EQ(files[0].at("filename").as_string(), dists[1].file) << page;
  }
  EXPECT_EQ(Get(r, "/simple/sageattention3/", kJsonV1).status, 404);
  Response moved = Get(r, "/simple/SageAttn3/", kJsonV1);  // PEP 503: to the normalised name
  EXPECT_EQ(moved.status / 100, 3);
  bool to_sageattn3 = false;
  for (const auto& [name, value] : moved.headers) {
    to_sageattn3 |= name == "Location" && value.ends_with("/simple/sageattn3/");
  }
  EXPECT_TRUE(to_sageattn3);
}

TEST_F(IndexTest, HtmlPagesRedirectsAnd406) {
  std::string a =
      Wheel("attn_example-1.0+cu130-py3-none-any.whl", "13.0", "", farm::v1::VALIDATION_PASSED);
  Router r = MakeRouter();
  Response list = Get(r, "/simple/", "text/html");
  EXPECT_EQ(list.content_type, "text/html; charset=utf-8");
  EXPECT_NE(list.body.find("<a href=\"attn-example/\">attn-example</a>"), std::string::npos);
  EXPECT_NE(list.body.find("pypi:repository-version"), std::string::npos);
  Response page = Get(r, "/cu130/simple/attn-example/", kHtmlV1);
  EXPECT_EQ(page.content_type, kHtmlV1);
  std::string md = Sha256Hex(kMetadata);
  EXPECT_NE(page.body.find("href=\"/files/" + a +
                           "/attn_example-1.0+cu130-py3-none-any.whl#sha256=" + a + "\""),
            std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("data-requires-python=\"&gt;=3.9\""), std::string::npos);
  EXPECT_NE(page.body.find("data-core-metadata=\"sha256=" + md + "\""), std::string::npos);
  Response moved = Get(r, "/cu130/simple/Attn_Example/");
  EXPECT_EQ(moved.status, 301);
  ASSERT_EQ(moved.headers.size(), 1u);
  EXPECT_EQ(moved.headers[0].second, "/cu130/simple/attn-example/");
  EXPECT_EQ(Get(r, "/simple/attn-example").status, 301);
  EXPECT_EQ(Get(r, "/simple").status, 301);
  EXPECT_EQ(Get(r, "/simple/other/").status, 404);
  EXPECT_EQ(Get(r, "/simple/", "application/xml").status, 406);
  EXPECT_EQ(Json(Get(r, "/simple/", kJsonV1)).at("projects").as_array()[0].at("name").as_string(),
            "attn-example");
}

// pip asks for a project under its PEP 503 name, and PEP 503 keeps a leading or trailing
// separator ("_attn" is "-attn"): the index files a wheel under that same name.
TEST_F(IndexTest, AProjectNameWithALeadingSeparatorIsServedUnderPipsName) {
  Wheel("_attn_private-1.0+cu130-py3-none-any.whl", "13.0", "", farm::v1::VALIDATION_PASSED);
  Router r = MakeRouter();
  auto page = Json(Get(r, "/simple/-attn-private/", kJsonV1));
  ASSERT_EQ(page.at("files").as_array().size(), 1u);
  EXPECT_EQ(page.at("name").as_string(), "-attn-private");
  Response moved = Get(r, "/simple/_attn_private/");
  EXPECT_EQ(moved.status, 301);
  ASSERT_EQ(moved.headers.size(), 1u);
  EXPECT_EQ(moved.headers[0].second, "/simple/-attn-private/");
  EXPECT_EQ(Get(r, "/simple/attn-private/").status, 404);
}

TEST_F(IndexTest, ServesFilesAndCoreMetadata) {
  std::string name = "attn_example-1.0+cu130-py3-none-any.whl";
  std::string a = Wheel(name, "13.0", "", farm::v1::VALIDATION_PASSED);
  std::string failed =
      Wheel("attn_example-2.0-py3-none-any.whl", "13.0", "", farm::v1::VALIDATION_FAILED);
  Router r = MakeRouter();
  Response file = Get(r, "/files/" + a + "/" + name);
  EXPECT_EQ(file.kind, BodyKind::kFile);
  EXPECT_EQ(file.file_path, blobs_->LocalPath(a).value());
  Response md = Get(r, "/files/" + a + "/" + name + ".metadata");
  EXPECT_EQ(md.status, 200);
  EXPECT_EQ(md.body, kMetadata);
  EXPECT_EQ(Get(r, "/files/" + a + "/other.whl").status, 404);
  EXPECT_EQ(Get(r, "/files/" + failed + "/attn_example-2.0-py3-none-any.whl").status, 404);
}

// A blob store with presigned URLs: reads from the local store, URLs made up.
class PresigningBlobs final : public store::BlobStore {
 public:
  explicit PresigningBlobs(store::BlobStore* local) : BlobStore(""), local_(local) {}
  bool Contains(const std::string& sha) override { return local_->Contains(sha); }
  Status Remove(const std::string& sha) override { return local_->Remove(sha); }
  Result<std::unique_ptr<store::BlobReader>> OpenRead(const std::string& sha,
                                                      int64_t offset) override {
    return local_->OpenRead(sha, offset);
  }
  Result<std::string> LocalPath(const std::string& sha) override { return local_->LocalPath(sha); }
  Result<std::string> PresignedUrl(const std::string& sha, const std::string& filename,
                                   int64_t ttl_s) override {
    return "https://bucket.example/" + sha + "?ttl=" + std::to_string(ttl_s) + "&name=" + filename;
  }

 protected:
  Status Place(const std::string&, const std::string&, int64_t) override {
    return Status::Unimplemented("read-only");
  }

 private:
  store::BlobStore* local_;
};

TEST_F(IndexTest, RedirectsFileDownloadsToPresignedUrlsWhenAsked) {
  std::string name = "attn_example-1.0+cu130-py3-none-any.whl";
  std::string a = Wheel(name, "13.0", "", farm::v1::VALIDATION_PASSED);
  DashboardOptions options;
  options.index_redirect_ttl_s = 120;
  {
    Router local = MakeRouter(options);  // the local store has no presigned URLs
    Response file = Get(local, "/files/" + a + "/" + name);
    EXPECT_EQ(file.status, 501) << file.body;
    EXPECT_NE(file.body.find("presigned"), std::string::npos) << file.body;
  }
  std::unique_ptr<store::BlobStore> local = std::move(blobs_);
  blobs_ = std::make_unique<PresigningBlobs>(local.get());
  Router r = MakeRouter(options);
  Response file = Get(r, "/files/" + a + "/" + name);
  EXPECT_EQ(file.status, 302);
  ASSERT_EQ(file.headers.size(), 1u);
  EXPECT_EQ(file.headers[0].second, "https://bucket.example/" + a + "?ttl=120&name=" + name);
  Response md = Get(r, "/files/" + a + "/" + name + ".metadata");  // still served by farmd
  EXPECT_EQ(md.status, 200);
  EXPECT_EQ(md.body, kMetadata);
  EXPECT_EQ(Get(r, "/files/" + a + "/other.whl").status, 404);
  EXPECT_EQ(Get(r, "/files/" + std::string(64, 'f') + "/" + name).status, 404);
  Router unredirected = MakeRouter();
  Response plain = Get(unredirected, "/files/" + a + "/" + name);
  EXPECT_EQ(plain.kind, BodyKind::kFile);
  EXPECT_EQ(plain.file_path, local->LocalPath(a).value());
  blobs_ = std::move(local);
}

TEST_F(IndexTest, ReadWheelMetadataRejectsNonZip) {
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/bad.whl", "not a zip"));
  EXPECT_FALSE(ReadWheelMetadata(dir_.path() + "/bad.whl").ok());
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/nometa.whl", MakeZip({{"a/b.py", "x"}})));
  EXPECT_EQ(ReadWheelMetadata(dir_.path() + "/nometa.whl").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace farm::http::testing
