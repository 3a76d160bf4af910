// The PEP 825 variants path: labels and properties of each wheel, the project page with the
// variants file of each version, the variant wheels themselves, and what it refuses.
#include "daemon/http/index/variant_index.h"

#include "common/fs.h"
#include "common/sha256.h"
#include "daemon/http/index/simple_index.h"
#include "tests/unit/common/wheel/wheel_builder.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

IndexFile FileWith(const std::string& cuda, const std::vector<std::string>& images) {
  IndexFile f;
  f.cuda = cuda;
  for (const auto& i : images) f.images.push_back(*arch::ParseImage(i));
  return f;
}

TEST(VariantForTest, LabelsNameThePropertiesOfTheNvidiaProviderDraft) {
  VariantOfFile v = VariantFor(FileWith("13.0", {"sm_90a", "sm_120a", "sm_121a"}));
  EXPECT_EQ(v.label, "sm90.120.121");
  EXPECT_EQ(json::parse(v.properties_json),
            json::parse(R"({"nvidia": {"cuda_version_lower_bound": ["13.0"],
                           "sm_arch": ["90_real", "120_real", "121_real"]}})"));
  // PTX: the provider offers a GPU the virtual value of its own major.
  v = VariantFor(FileWith("13.0", {"sm_120", "compute_121"}));
  EXPECT_EQ(v.label, "sm120v120");
  EXPECT_NE(v.properties_json.find("\"120_virtual\""), std::string::npos);
  EXPECT_EQ(VariantFor(FileWith("13.0", {})).label, "cu130");
  EXPECT_EQ(VariantFor(FileWith("", {})).label, "null");
  EXPECT_EQ(VariantFor(FileWith("", {})).properties_json, "{}");
  // Past 16 characters: the range and a short hash of the properties.
  v = VariantFor(FileWith(
      "13.0", {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "sm_121"}));
  EXPECT_EQ(v.label.substr(0, 10), "sm75to121.");
  EXPECT_EQ(v.label.size(), 14u);
  // Another set of the same range gets another label.
  EXPECT_NE(v.label, VariantFor(FileWith("13.0", {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90",
                                                  "sm_103", "sm_120", "sm_121"}))
                         .label);
}

class VariantIndexTest : public HttpFixture {
 protected:
  // A complete wheel (RECORD and all) of attn-example 0.1.0 with `label`, stored as the
  // artifact of a finished job of CUDA 13.0 with `images`.
  std::string Add(const std::string& label, const std::vector<std::string>& images) {
    wheel::testing::WheelSpec spec;
    spec.filename = "attn_example-0.1.0+" + label + "-cp311-cp311-linux_x86_64.whl";
    spec.dist_info = "attn_example-0.1.0+" + label + ".dist-info";
    spec.metadata = "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0+" + label + "\n";
    spec.wheel =
        "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: false\n"
        "Tag: cp311-cp311-linux_x86_64\n";
    std::string dir = dir_.path() + "/w-" + label;
    EXPECT_OK(fs::MakeDirs(dir));
    std::string path = wheel::testing::WriteWheel(dir, spec).value();
    farm::v1::ArchManifest m;
    for (const auto& i : images) {
      auto* image = m.add_images();
      image->set_arch(i), image->set_kind(i.starts_with("sm_") ? "sass" : "ptx");
    }
    std::string sha = AddFinishedWheelFile("13.0", "", spec.filename, fs::ReadFile(path).value(), 3,
                                           m.SerializeAsString());
    clock_.Advance(1000);
    return sha;
  }
  Router Make() {
    DashboardOptions options;
    options.variant_wheels_dir = dir_.path() + "/variant-wheels";
    return MakeRouter(options);
  }
};

TEST_F(VariantIndexTest, ThePageListsEachVariantWheelAndTheVariantsFileOfItsVersion) {
  Add("cu130.sm90", {"sm_90"});
  Add("cu130.sm120a", {"sm_120a"});
  Router r = Make();
  Response page = Get(r, "/variants/cu130/simple/attn-example/", kJsonV1);
  ASSERT_EQ(page.status, 200) << page.body;
  std::map<std::string, std::string> files;  // name -> url
  const json::value doc = Json(page);
  for (const auto& f : doc.at("files").as_array()) {
    files[std::string(f.at("filename").as_string())] = std::string(f.at("url").as_string());
  }
  const std::string a = "attn_example-0.1.0-cp311-cp311-linux_x86_64-sm90.whl";
  const std::string b = "attn_example-0.1.0-cp311-cp311-linux_x86_64-sm120.whl";
  const std::string vj = "attn_example-0.1.0-variants.json";
  ASSERT_EQ(files.size(), 3u) << page.body;
  ASSERT_TRUE(files.count(a) && files.count(b) && files.count(vj)) << page.body;
  Response variants = Get(r, files[vj]);
  ASSERT_EQ(variants.status, 200) << variants.body;
  json::value v = json::parse(variants.body);
  EXPECT_EQ(v.at("default-priorities").at("namespace"), json::array{"nvidia"});
  EXPECT_EQ(v.at("variants").as_object().size(), 2u);
  EXPECT_EQ(v.at("variants").at("sm120").at("nvidia").at("sm_arch"), json::array{"120_real"});
  Response wheel = Get(r, files[a]);
  ASSERT_EQ(wheel.status, 200);
  EXPECT_EQ(wheel.kind, BodyKind::kFile);
  EXPECT_NE(files[a].find(Sha256FileHex(wheel.file_path).value()), std::string::npos);
  // HTML links the same files with their sha256.
  Response html = Get(r, "/variants/cu130/simple/attn-example/");
  EXPECT_NE(html.body.find(vj + "#sha256=" + Sha256Hex(variants.body)), std::string::npos)
      << html.body;
}

TEST_F(VariantIndexTest, RefusesWhatIsNotThere) {
  Add("cu130.sm90", {"sm_90"});
  Router r = Make();
  EXPECT_EQ(Get(r, "/variants/cu999/simple/").status, 404);
  EXPECT_EQ(Get(r, "/variants/").status, 404);
  EXPECT_EQ(Get(r, "/variants/cu130/simple/Attn_Example/").status, 301);
  EXPECT_EQ(Get(r, "/variants/cu130/simple/a/b/").status, 404);
  EXPECT_EQ(Get(r, "/variants/cu130/files/deadbeef/x.whl").status, 404);
  EXPECT_EQ(Get(r, "/variants/cu130/files/attn-example/other-1.0-variants.json").status, 404);
  EXPECT_EQ(Get(r, "/variants/../etc/simple/").status, 404);
  // Without a directory for them, no variant wheel is made.
  Router bare = MakeRouter();
  EXPECT_EQ(Get(bare, "/variants/cu130/simple/attn-example/", kJsonV1).status, 503);
}

}  // namespace
}  // namespace farm::http::testing
