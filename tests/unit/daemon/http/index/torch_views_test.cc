// Torch views of the index over a real SQLite store: which wheels a user with a given
// torch (and its CUDA) on a given GPU is offered, the directory's torch views, the JSON
// pages' torch requirement, and hostile torch segments.
#include "daemon/http/index/torch_views.h"

#include "daemon/http/index/simple_index.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

constexpr char k28[] = "pinned_pkg-0.1.0+cu128torch2.8-py3-none-any.whl";
constexpr char k29[] = "pinned_pkg-0.1.0+cu128torch2.9-py3-none-any.whl";
constexpr char kStable[] = "stable_pkg-0.1.0+cu12torch2.9andhigher-py3-none-any.whl";
constexpr char kPlain[] = "plain_pkg-0.1.0+cu128-py3-none-any.whl";
constexpr char kCu130[] = "pinned_pkg-0.1.0+cu130torch2.9-py3-none-any.whl";

std::string Md(const std::string& name, const std::string& rows) {
  return "Metadata-Version: 2.1\nName: " + name + "\nVersion: 0.1.0\n" + rows + "\n";
}

class TorchViewsTest : public HttpFixture {
 protected:
  void Wheel(const std::string& cuda, const std::string& torch, const std::string& name,
             const std::string& metadata) {
    AddFinishedWheel(cuda, torch, name, metadata, 3, Sm90Manifest());
    clock_.Advance(1000);
  }
  void AddAll() {
    Wheel("12.8", "2.8", k28, Md("pinned-pkg", "Requires-Dist: torch==2.8.*\n"));
    Wheel("12.8", "2.9", k29, Md("pinned-pkg", "Requires-Dist: torch==2.9.*\n"));
    Wheel("12.8", "2.10", kStable, Md("stable-pkg", "Requires-Dist: torch>=2.9\n"));
    Wheel("12.8", "", kPlain, Md("plain-pkg", "Requires-Dist: numpy\n"));
  }
  std::vector<std::string> Files(Router& r, const std::string& view, const std::string& project) {
    return ListedWheels(r, view, project);
  }
};

using Names = std::vector<std::string>;

TEST_F(TorchViewsTest, EachTorchSeesOnlyTheWheelsItsVersionSatisfies) {
  AddAll();
  Router r = MakeRouter();
  EXPECT_EQ(Files(r, "/cu128/sm90/torch2.8.0/simple/", "pinned-pkg"), Names{k28});
  EXPECT_EQ(Files(r, "/cu128/sm90/torch2.9.1/simple/", "pinned-pkg"), Names{k29});
  EXPECT_EQ(Files(r, "/cu128/sm90/torch2.10.0/simple/", "pinned-pkg"), Names{});
  EXPECT_EQ(Files(r, "/cu128/sm90/torch2.8.0/simple/", "stable-pkg"), Names{});
  EXPECT_EQ(Files(r, "/cu128/sm90/torch2.9.0/simple/", "stable-pkg"), Names{kStable});
  EXPECT_EQ(Files(r, "/cu128/sm90/torch2.10.0/simple/", "stable-pkg"), Names{kStable});
  // No torch requirement: in every torch view of its CUDA.
  for (const char* t : {"2.8.0", "2.9.0", "2.10.0", "3.0"}) {
    EXPECT_EQ(Files(r, std::string("/cu128/sm90/torch") + t + "/simple/", "plain-pkg"),
              Names{kPlain})
        << t;
  }
  // The project list of a view names only what installs there.
  Response list = Get(r, "/cu128/sm90/torch2.10.0/simple/", kJsonV1);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(json::serialize(Json(list).at("projects")),
            R"([{"name":"plain-pkg"},{"name":"stable-pkg"}])");
  // A GPU the wheels do not load on has none.
  EXPECT_EQ(Get(r, "/cu128/sm120/torch2.8.0/simple/", kJsonV1).status, 404);
}

TEST_F(TorchViewsTest, CudaMustShareTheMajorAndBeNoNewerThanTorchs) {
  AddAll();
  Wheel("13.0", "2.9", kCu130, Md("pinned-pkg", "Requires-Dist: torch==2.9.*\n"));
  Router r = MakeRouter();
  EXPECT_EQ(Files(r, "/cu130/sm90/torch2.9.0/simple/", "pinned-pkg"), Names{kCu130});
  // A torch built for CUDA 12.9 runs the 12.8 wheel; one for 12.6 does not.
  EXPECT_EQ(Files(r, "/cu129/sm90/torch2.9.0/simple/", "pinned-pkg"), Names{k29});
  EXPECT_EQ(Files(r, "/cu126/sm90/torch2.9.0/simple/", "pinned-pkg"), Names{});
}

TEST_F(TorchViewsTest, PagesSayEachWheelsTorchRequirement) {
  AddAll();
  Router r = MakeRouter();
  Response page = Get(r, "/cu128/simple/pinned-pkg/", kJsonV1);
  EXPECT_EQ(page.status, 404);  // the cells with torch have variants of their own
  page = Get(r, "/cu128-torch2.8/simple/pinned-pkg/", kJsonV1);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(Json(page).at("files").at(0).at("torch-requirement"), "torch==2.8.*");
  Response html = Get(r, "/cu128-torch2.8/simple/pinned-pkg/");
  EXPECT_NE(html.body.find("data-torch-requirement=\"torch==2.8.*\""), std::string::npos);
  Response plain = Get(r, "/cu128/simple/plain-pkg/", kJsonV1);
  ASSERT_EQ(plain.status, 200);
  EXPECT_FALSE(Json(plain).at("files").at(0).as_object().contains("torch-requirement"));
  Response variants = Get(r, "/files/variants/stable-pkg/stable_pkg-0.1.0-variants.json");
  ASSERT_EQ(variants.status, 200) << variants.body;
  EXPECT_EQ(
      Json(variants).at("variants").at("cu12torch2.9andhigher").at("torch").at("requires_dist"),
      json::array{"torch>=2.9"});
}

TEST_F(TorchViewsTest, NoWheelForThisTorchSaysWhatTheFarmHas) {
  AddAll();
  Router r = MakeRouter();
  const std::string why =
      "no wheel of pinned-pkg installs next to torch 2.10.0 for CUDA 12.8 on compute capability "
      "9.0; its wheels for this GPU require: torch==2.8.* (cu128), torch==2.9.* (cu128)";
  Response browser = Get(r, "/cu128/sm90/torch2.10.0/simple/pinned-pkg/", "text/html");
  EXPECT_EQ(browser.status, 404);
  EXPECT_NE(browser.body.find(why), std::string::npos) << browser.body;
  // An installer gets the placeholder, whose download says it as its reason phrase.
  Response installer = Get(r, "/cu128/sm90/torch2.10.0/simple/pinned-pkg/", kJsonV1);
  ASSERT_EQ(installer.status, 200);
  std::string url(Json(installer).at("files").at(0).at("url").as_string());
  EXPECT_EQ(url,
            "/files/no-wheel/cu128/sm90/torch2.10.0/"
            "pinned_pkg-0+no.wheel.for.sm90-py3-none-any.whl");
  Response file = Get(r, url);
  EXPECT_EQ(file.status, 404);
  EXPECT_NE(file.reason.find(why.substr(0, 60)), std::string::npos) << file.reason;
}

TEST_F(TorchViewsTest, DirectoryListsTheTorchViewsOfKnownReleases) {
  AddAll();
  Router r = MakeRouter();
  Response dir = Get(r, "/", "application/json");
  ASSERT_EQ(dir.status, 200);
  std::vector<std::string> urls;
  const json::value doc = Json(dir);  // the loop reads members: keep the value alive
  for (const auto& v : doc.at("torch_views").as_array()) {
    if (v.at("gpu") != "sm90") continue;
    urls.push_back(std::string(v.at("index_url").as_string()));
    if (v.at("torch") == "2.8") {
      EXPECT_EQ(json::serialize(v.at("projects")), R"(["pinned-pkg","plain-pkg"])");
    }
  }
  EXPECT_EQ(urls, (Names{"http://localhost/cu128/sm90/torch2.8/simple/",
                         "http://localhost/cu128/sm90/torch2.9/simple/",
                         "http://localhost/cu128/sm90/torch2.10/simple/"}));
  Response root = Get(r, "/simple/", kJsonV1);
  EXPECT_EQ(Json(root).at("torch_views").as_array().size(),
            doc.at("torch_views").as_array().size());
}

TEST_F(TorchViewsTest, HostileTorchSegmentsAnswer404) {
  AddAll();
  Router r = MakeRouter();
  std::string huge = "/cu128/sm90/torch" + std::string(100000, '9') + "/simple/";
  for (const std::string& path :
       {std::string("/cu128/sm90/torch../simple/"), std::string("/cu128/sm90/torch../../simple/"),
        std::string("/cu128/sm90/torch..%2F..%2Fetc/simple/"),
        std::string("/cu128/sm90/torch2.8.0+cu128/simple/"),
        std::string("/cu128/sm90/torch2.8.0/../../simple/"),
        std::string("/cu128/sm90/torch/simple/"), std::string("/cu128/sm90/torchbanana/simple/"),
        std::string("/cu128/sm90/torch2.08/simple/"),
        std::string("/cu128/sm90/torch2.8.0-rc1/simple/"),
        std::string("/cu128/sm90/torch%00/simple/"), std::string("/cu128/sm90/torch2.8\n/simple/"),
        huge, "/cu128/sm90/torch" + std::string(30, '1') + ".1/simple/",
        std::string("/cu0/sm90/torch2.8.0/simple/"),
        std::string("/cuda128/sm90/torch2.8.0/simple/"),
        std::string("/cu128-torch2.8/sm90/torch2.8.0/simple/"),
        std::string("/files/no-wheel/cu128/sm90/torch../x-0-py3-none-any.whl"),
        std::string("/files/no-wheel/cu128/sm90/torch2.8.0/a/b-0-py3-none-any.whl")}) {
    Response resp = Get(r, path, kJsonV1);
    EXPECT_TRUE(resp.status == 404 || resp.status == 400)
        << path.substr(0, 80) << " " << resp.status;
    EXPECT_EQ(resp.body.find(std::string(50, '9')), std::string::npos);
  }
  // The view without its trailing slash redirects, as every other view does.
  Response redirect = Get(r, "/cu128/sm90/torch2.8.0/simple");
  EXPECT_EQ(redirect.status, 301);
}

TEST(TorchSegmentsTest, OneSpellingPerRelease) {
  EXPECT_EQ(ParseTorchSegment("torch2.8.0")->Public(), "2.8.0");
  EXPECT_EQ(ParseTorchSegment("torch2.10.0rc1")->Public(), "2.10.0rc1");
  EXPECT_EQ(ParseTorchSegment("torch2.10.0.dev20250801")->Public(), "2.10.0.dev20250801");
  EXPECT_FALSE(ParseTorchSegment("torch2.10.0-rc1"));
  EXPECT_FALSE(ParseTorchSegment("torchv2.8"));
  EXPECT_FALSE(ParseTorchSegment("Torch2.8"));
  EXPECT_EQ(ParseCudaSegment("cu128"), (arch::Version{12, 8}));
  EXPECT_EQ(ParseCudaSegment("cu130"), (arch::Version{13, 0}));
  EXPECT_FALSE(ParseCudaSegment("cu1"));
  EXPECT_FALSE(ParseCudaSegment("cu08"));
  EXPECT_FALSE(ParseCudaSegment("cu12x"));
  EXPECT_EQ(CudaSegment("12.8"), "cu128");
  EXPECT_TRUE(CudaServes("12.8", {12, 9}));
  EXPECT_FALSE(CudaServes("12.8", {13, 0}));
  EXPECT_FALSE(CudaServes("", {12, 8}));
}

}  // namespace
}  // namespace farm::http::testing
