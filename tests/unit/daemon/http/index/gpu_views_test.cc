// The per-GPU views of the index, the directory of views and the install script, over a
// real SQLite store with wheels whose manifests name their code images.
#include "daemon/http/index/gpu_views.h"

#include "daemon/http/index/simple_index.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

constexpr char kGpuMetadata[] = "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0\n\n";
constexpr char kWide[] = "attn_example-0.1.0+cu130.sm90.sm120a.sm121a-cp311-cp311-linux_x86_64.whl";
constexpr char kNarrow[] = "attn_example-0.1.0+cu130.sm121a-cp311-cp311-linux_x86_64.whl";

std::string Manifest(const std::vector<std::string>& images,
                     const std::vector<std::string>& runs_on) {
  farm::v1::ArchManifest m;
  for (const auto& i : images) {
    auto* image = m.add_images();
    image->set_arch(i), image->set_kind(i.starts_with("sm_") ? "sass" : "ptx");
    image->set_module("attn_example/_C.so");
  }
  for (const auto& cc : runs_on) m.add_runs_on(cc);
  return m.SerializeAsString();
}

class GpuViewsTest : public HttpFixture {
 protected:
  std::string Wheel(const std::string& name, const std::string& manifest, int validation = 3) {
    std::string sha = AddFinishedWheel("13.0", "", name, kGpuMetadata, validation, manifest);
    clock_.Advance(1000);
    return sha;
  }
  void AddBoth() {
    wide_ = Wheel(kWide, Manifest({"sm_90", "sm_120a", "sm_121a"}, {"9.0", "12.0", "12.1"}));
    narrow_ = Wheel(kNarrow, Manifest({"sm_121a"}, {"12.1"}));
  }
  std::vector<std::string> Files(Router& r, const std::string& view) {
    Response resp = Get(r, view + "attn-example/", kJsonV1);
    EXPECT_EQ(resp.status, 200) << view << " " << resp.body;
    std::vector<std::string> out;
    if (resp.status != 200) return out;
    const json::value page = Json(resp);  // the loop reads a member: keep the value alive
    for (const auto& f : page.at("files").as_array()) {
      out.push_back(std::string(f.at("filename").as_string()));
    }
    return out;
  }
  std::string wide_, narrow_;
};

TEST_F(GpuViewsTest, EachGpuGetsOneWheelThatLoadsOnIt) {
  AddBoth();
  Router r = MakeRouter();
  EXPECT_EQ(Files(r, "/cu130/sm90/simple/"), std::vector<std::string>{kWide});
  EXPECT_EQ(Files(r, "/cu130/sm120/simple/"), std::vector<std::string>{kWide});
  // Both carry sm_121a; the one built for fewer targets wins (docs/index.md).
  EXPECT_EQ(Files(r, "/cu130/sm121/simple/"), std::vector<std::string>{kNarrow});
  // The variant view without a GPU lists both names, each once.
  EXPECT_EQ(Files(r, "/cu130/simple/").size(), 2u);
}

TEST_F(GpuViewsTest, AGpuWithoutAWheelIsToldWhatWasBuilt) {
  AddBoth();
  Router r = MakeRouter();
  Response none = Get(r, "/cu130/sm89/simple/attn-example/");
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body.find("no wheel of attn-example in cu130 runs on compute capability 8.9"),
            std::string::npos)
      << none.body;
  EXPECT_NE(none.body.find("built for: sm121a sm90.sm120a.sm121a"), std::string::npos) << none.body;
  EXPECT_EQ(Get(r, "/cu130/sm89/simple/").status, 404);
  Response bad = Get(r, "/cu130/sm77/simple/");
  EXPECT_EQ(bad.status, 404);
  EXPECT_NE(bad.body.find("GPU views are sm<major><minor>"), std::string::npos);
  EXPECT_EQ(Get(r, "/cu130/sm90/simple").status, 301);
}

TEST_F(GpuViewsTest, PtxOnlyAndOlderSassRankBelowExactSass) {
  IndexFile exact{.images = {{arch::Image::Kind::kSass, 12, 0, '\0'}}};
  IndexFile family{.images = {{arch::Image::Kind::kSass, 12, 0, '\0'}}};
  IndexFile ptx{.images = {{arch::Image::Kind::kPtx, 9, 0, '\0'}}};
  IndexFile arch_specific{.images = {{arch::Image::Kind::kSass, 12, 0, 'a'}}};
  EXPECT_EQ(GpuFit(exact, {12, 0}), 3);
  EXPECT_EQ(GpuFit(family, {12, 1}), 2);
  EXPECT_EQ(GpuFit(ptx, {12, 1}), 1);
  EXPECT_EQ(GpuFit(arch_specific, {12, 1}), 0);  // sm_120a never loads on a GB10
  EXPECT_EQ(GpuSegment({12, 1}), "sm121");
  EXPECT_EQ(ParseGpuSegment("sm121"), (arch::Version{12, 1}));
  EXPECT_FALSE(ParseGpuSegment("sm122").has_value());
}

TEST_F(GpuViewsTest, OneNameIsOneFileEvenWhenRebuiltBytesDiffer) {
  AddBoth();
  // A later build of the same cell: same name, other bytes. The newest is listed, once.
  auto ids = AddBuild(1, "13.0", "");
  Start(ids[0]);
  std::string newer = AddWheel(ids[0], kWide, std::string(kGpuMetadata) + "rebuilt\n", 3,
                               Manifest({"sm_90", "sm_120a", "sm_121a"}, {"9.0", "12.0", "12.1"}));
  Finish(ids[0]);
  ASSERT_NE(newer, wide_);
  Router r = MakeRouter();
  for (const char* view : {"/simple/", "/cu130/simple/", "/cu130/sm90/simple/"}) {
    Response resp = Get(r, std::string(view) + "attn-example/", kJsonV1);
    int named = 0;
    const json::value page = Json(resp);
    for (const auto& f : page.at("files").as_array()) {
      if (f.at("filename").as_string() == kWide) {
        ++named;
        EXPECT_EQ(f.at("hashes").at("sha256").as_string(), newer) << view;
      }
    }
    EXPECT_EQ(named, 1) << view;
  }
}

TEST_F(GpuViewsTest, DirectoryListsEveryViewWithItsUrlAndPipLine) {
  AddBoth();
  Router r = MakeRouter();
  Request req = MakeRequest("GET", "/");
  req.accept = "application/json";
  req.host = "farm.example:8080";
  Response dir = r.Handle(req);
  ASSERT_EQ(dir.status, 200) << dir.body;
  auto v = Json(dir);
  EXPECT_EQ(v.at("index").as_string(), "http://farm.example:8080/simple/");
  const auto& views = v.at("variants").as_array();
  ASSERT_EQ(views.size(), 3u);  // cu130 on 9.0, 12.0 and 12.1
  EXPECT_EQ(views[0].at("gpu").as_string(), "sm90");
  EXPECT_EQ(views[0].at("index_url").as_string(), "http://farm.example:8080/cu130/sm90/simple/");
  EXPECT_EQ(views[0].at("pip").as_string(),
            "pip install --index-url http://farm.example:8080/cu130/sm90/simple/ attn-example");
  EXPECT_NE(std::string(views[2].at("gpus").as_string()).find("GB10"), std::string::npos);
  // The PEP 691 root carries the same directory; the HTML root shows it to people.
  req.path = "/simple/";
  req.accept = kJsonV1;
  auto root = Json(r.Handle(req));
  EXPECT_EQ(root.at("variants").as_array().size(), 3u);
  EXPECT_EQ(root.at("projects").as_array().size(), 1u);
  req.accept = "text/html";
  Response html = r.Handle(req);
  EXPECT_NE(html.body.find("/cu130/sm121/simple/"), std::string::npos);
  // A Host header that is not a host is not copied into URLs.
  req.path = "/";
  req.accept = "application/json";
  req.host = "evil\"<script>";
  EXPECT_EQ(Json(r.Handle(req)).at("index").as_string(), "http://localhost/simple/");
  // Browsers still get the dashboard.
  req.accept = "text/html,application/json";
  EXPECT_NE(r.Handle(req).body.find("<html"), std::string::npos);
}

TEST_F(GpuViewsTest, InstallScriptCarriesTheFarmUrl) {
  Router r = MakeRouter();
  Request req = MakeRequest("GET", "/install");
  req.host = "10.0.0.5:7443";
  req.secure = true;
  Response script = r.Handle(req);
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.content_type, "text/x-python; charset=utf-8");
  EXPECT_NE(script.body.find("DEFAULT_FARM = \"https://10.0.0.5:7443\""), std::string::npos);
  EXPECT_EQ(script.body.find("@FARM_URL@"), std::string::npos);
}

TEST_F(GpuViewsTest, PreReleasesStayOutOfGpuViewsUnlessAskedFor) {
  AddBoth();
  Wheel("attn_example-0.2.0rc1+cu130.sm90-cp311-cp311-linux_x86_64.whl",
        Manifest({"sm_90"}, {"9.0"}));
  Router r = MakeRouter();
  EXPECT_EQ(Files(r, "/cu130/sm90/simple/"), std::vector<std::string>{kWide});
  auto all = Files(r, "/cu130/simple/");
  EXPECT_EQ(all.size(), 3u);  // the variant view lists it for those who ask (pip --pre)
}

TEST_F(GpuViewsTest, WheelVariantMetadataListsEachLabelWithItsProperties) {
  AddBoth();
  Router r = MakeRouter();
  auto page = Json(Get(r, "/cu130/sm90/simple/attn-example/", kJsonV1));
  const auto& links = page.at("variants-json").as_array();
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].as_string(), "/files/variants/attn-example/attn_example-0.1.0-variants.json");
  Response doc = Get(r, std::string(links[0].as_string()));
  ASSERT_EQ(doc.status, 200) << doc.body;
  auto v = Json(doc);
  const auto& wide = v.at("variants").at("cu130.sm90.sm120a.sm121a").at("nvidia");
  EXPECT_EQ(wide.at("cuda_version_lower_bound").as_array()[0].as_string(), "13.0");
  EXPECT_EQ(wide.at("sm_arch").as_array().size(), 3u);
  EXPECT_EQ(
      v.at("variants").at("cu130.sm121a").at("nvidia").at("sm_arch").as_array()[0].as_string(),
      "121_real");
  EXPECT_EQ(Get(r, "/files/variants/attn-example/nope-variants.json").status, 404);
}

}  // namespace
}  // namespace farm::http::testing
