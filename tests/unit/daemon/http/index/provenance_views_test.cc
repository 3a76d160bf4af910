// The provenance routes: the key set, each listed wheel's PEP 740 object and envelope
// lines (linked from PEP 691 JSON and the HTML page), and the keys in the install script.
#include "daemon/http/index/provenance_views.h"

#include "common/provenance/base64.h"
#include "common/provenance/pep740.h"
#include "common/provenance/verify.h"
#include "daemon/attest/attestor.h"
#include "daemon/http/index/simple_index.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

constexpr char kProvenanceMetadata[] = "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0\n";
constexpr char kProvenanceName[] = "attn_example-1.0+cu130-py3-none-any.whl";

class ProvenanceViewsTest : public HttpFixture {
 protected:
  void SetUp() override {
    HttpFixture::SetUp();
    keys_ = provenance::KeyRing::Open(dir_.path() + "/provenance", clock_).value();
    attestor_ = std::make_unique<attest::Attestor>(store_.get(), keys_.get(), &clock_);
  }
  // A listed wheel; signed unless `sign` is false. Returns its sha256.
  std::string Wheel(const std::string& filename, bool sign = true) {
    auto ids = AddBuild(1, "13.0", "");
    Start(ids[0]);
    std::string sha = AddWheel(ids[0], filename, kProvenanceMetadata, farm::v1::VALIDATION_PASSED);
    if (sign) {
      auto artifacts = store_->ListArtifacts(ids[0]).value();
      for (const auto& a : artifacts) EXPECT_OK(attestor_->AttestBuild(a));
    }
    Finish(ids[0]);
    return sha;
  }
  Router SignedRouter() {
    return Router({},
                  DashboardDeps{store_.get(), blobs_.get(), auth_.get(), &clock_, attestor_.get()});
  }

  std::unique_ptr<provenance::KeyRing> keys_;
  std::unique_ptr<attest::Attestor> attestor_;
};

TEST_F(ProvenanceViewsTest, KeysAreServedAtTheirFixedPath) {
  Router r = SignedRouter();
  Response keys = Get(r, kKeysPath);
  ASSERT_EQ(keys.status, 200) << keys.body;
  EXPECT_EQ(keys.content_type, "application/json");
  auto set = provenance::ParseKeySet(keys.body);
  ASSERT_OK(set.status());
  EXPECT_EQ(set->Active()->keyid, keys_->Keys().Active()->keyid);
  Router unsigned_router = MakeRouter();
  EXPECT_EQ(Get(unsigned_router, kKeysPath).status, 404);
}

TEST_F(ProvenanceViewsTest, IndexLinksEachFilesPep740ProvenanceAndItVerifies) {
  std::string sha = Wheel(kProvenanceName);
  Router r = SignedRouter();
  auto page = Json(Get(r, "/simple/attn-example/", kJsonV1));
  const auto& file = page.at("files").as_array()[0].as_object();
  std::string url(file.at("url").as_string());
  EXPECT_EQ(file.at("provenance").as_string(), url + ".provenance");
  EXPECT_NE(Get(r, "/simple/attn-example/").body.find("data-provenance=\"" + url + ".provenance\""),
            std::string::npos);

  Response pep740 = Get(r, url + ".provenance");
  ASSERT_EQ(pep740.status, 200) << pep740.body;
  EXPECT_EQ(pep740.content_type, provenance::kPep740MediaType);
  auto envelopes = provenance::ParsePep740Provenance(pep740.body);
  ASSERT_OK(envelopes.status());
  auto v = provenance::VerifyWheel({kProvenanceName, sha}, *envelopes, keys_->Keys(), {});
  EXPECT_TRUE(v.ok) << v.problems[0];

  Response lines = Get(r, url + ".intoto.jsonl");
  ASSERT_EQ(lines.status, 200);
  auto parsed = provenance::ParseEnvelopeLines(lines.body);
  ASSERT_OK(parsed.status());
  EXPECT_TRUE(provenance::VerifyWheel({kProvenanceName, sha}, *parsed, keys_->Keys(), {}).ok);
}

TEST_F(ProvenanceViewsTest, UnsignedOrUnlistedFilesHaveNone) {
  std::string sha = Wheel(kProvenanceName, /*sign=*/false);
  Router r = SignedRouter();
  std::string url = "/files/" + sha + "/" + kProvenanceName;
  Response none = Get(r, url + ".provenance");
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body.find("has no signed provenance"), std::string::npos) << none.body;
  EXPECT_EQ(
      Get(r, "/files/" + std::string(64, 'f') + "/" + kProvenanceName + ".intoto.jsonl").status,
      404);
  Router plain = MakeRouter();  // a farmd keeping no provenance names none
  auto page = Json(Get(plain, "/simple/attn-example/", kJsonV1));
  EXPECT_FALSE(page.at("files").as_array()[0].as_object().contains("provenance"));
}

// The farm's record of a project's owner, which farmctl verify checks statements against.
TEST_F(ProvenanceViewsTest, AProjectsOwnerIsAnsweredForAnySpellingOfItsName) {
  Router r = SignedRouter();
  ASSERT_OK(store_->ClaimProjectName("attn-example", "alice", 1'700'000'000'000).status());
  Response record = Get(r, "/api/v1/projects/Attn_Example");
  ASSERT_EQ(record.status, 200) << record.body;
  auto doc = Json(record);
  EXPECT_EQ(doc.at("name").as_string(), "attn-example");
  EXPECT_EQ(doc.at("owner").as_string(), "alice");
  EXPECT_EQ(doc.at("claimed").as_string(), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(Get(r, "/api/v1/projects/nobody-owns-this").status, 404);
}

TEST_F(ProvenanceViewsTest, InstallScriptCarriesTheKeySet) {
  Router r = SignedRouter();
  Response script = Get(r, "/install");
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.body.find("@FARM_KEYS@"), std::string::npos);
  std::string keys = provenance::Base64Encode(keys_->KeysJson().value());
  EXPECT_NE(script.body.find("FARM_KEYS = \"" + keys + "\""), std::string::npos);
}

}  // namespace
}  // namespace farm::http::testing
