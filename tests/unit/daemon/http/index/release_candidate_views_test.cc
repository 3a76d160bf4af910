// Release candidates in the index over a real SQLite store (docs/index.md, "Release
// candidates"): a wheel built against a torch release candidate is left out of every
// default view and listed in the same view under /rc/, until its final release's wheel is
// there; a candidate never takes a final wheel's place, whatever their order.
#include <algorithm>

#include "daemon/http/index/simple_index.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

constexpr char kCandidate[] = "rc_pkg-0.1.0+cu130torch2.12rc-py3-none-any.whl";
constexpr char kFinal[] = "rc_pkg-0.1.0+cu130torch2.12-py3-none-any.whl";
constexpr char kOld[] = "rc_pkg-0.1.0+cu130torch2.11-py3-none-any.whl";

std::string CandidateMetadata(const std::string& torch) {
  return "Metadata-Version: 2.1\nName: rc-pkg\nVersion: 0.1.0\nRequires-Dist: torch==" + torch +
         ".*\n\n";
}

class ReleaseCandidateViewsTest : public HttpFixture {
 protected:
  // A finished build of one job of torch `torch` on CUDA 13.0 that made `filename`.
  std::string Wheel(const std::string& torch, const std::string& filename, bool candidate,
                    const std::string& metadata = "") {
    store::BuildRow b{.recipe_name = "rc-pkg", .submitted_by = "test"};
    b.created_ms = clock_.NowUnixMs();
    farm::v1::MatrixCell c;
    c.set_python("3.11"), c.set_torch(torch), c.set_cuda("13.0");
    std::vector<store::JobRow> jobs(1);
    jobs[0].cell = c.SerializeAsString();
    jobs[0].created_ms = clock_.NowUnixMs();
    jobs[0].release_candidate = candidate;
    EXPECT_OK(store_->CreateBuild(&b, &jobs));
    Start(jobs[0].id);
    std::string sha =
        AddWheel(jobs[0].id, filename, metadata.empty() ? CandidateMetadata(torch) : metadata,
                 store::kValidationPassed, Sm90Manifest());
    Finish(jobs[0].id);
    clock_.Advance(1000);
    return sha;
  }
  std::vector<std::string> Files(Router& r, const std::string& view) {
    std::vector<std::string> out = ListedWheels(r, view, "rc-pkg");
    std::sort(out.begin(), out.end());
    return out;
  }
};

using Names = std::vector<std::string>;

// Every view a user of torch 2.12 on an H100 with CUDA 13.0 might point pip at.
const std::vector<std::string> kViews = {"/simple/", "/cu130-torch2.12/simple/",
                                         "/cu130-torch2.12/sm90/simple/",
                                         "/cu130/sm90/torch2.12.0/simple/"};

TEST_F(ReleaseCandidateViewsTest, ACandidateIsListedOnlyUnderRcUntilItsFinalIs) {
  Wheel("2.11", kOld, false);
  std::string sha = Wheel("2.12", kCandidate, true);
  Router r = MakeRouter();
  for (const std::string& view : kViews) {
    if (view == "/simple/") continue;  // every variant's: 2.11's wheel too
    EXPECT_EQ(Files(r, view), Names{}) << view;
    EXPECT_EQ(Files(r, "/rc" + view), Names{kCandidate}) << view;
  }
  EXPECT_EQ(Files(r, "/simple/"), Names{kOld});
  EXPECT_EQ(Files(r, "/rc/simple/"), (Names{kOld, kCandidate}));
  EXPECT_EQ(Files(r, "/rc/cu130-torch2.11/simple/"), Names{kOld});  // finals are there too
  // The root's directory leads to the views that list it, under /rc/ too.
  Response root = Get(r, "/rc/simple/", kJsonV1);
  ASSERT_EQ(root.status, 200) << root.body;
  EXPECT_NE(json::serialize(Json(root).at("variants")).find("/rc/cu130-torch2.12/sm90/simple/"),
            std::string::npos)
      << root.body;
  EXPECT_EQ(Get(r, "/", kJsonV1).body.find("torch2.12"), std::string::npos);
  // Its file downloads by its URL wherever it was found.
  EXPECT_EQ(Get(r, "/files/" + sha + "/" + kCandidate).status, 200);

  Wheel("2.12", kFinal, false);  // the final release's build
  Router after = MakeRouter();
  for (const std::string& view : kViews) {
    if (view == "/simple/") continue;
    EXPECT_EQ(Files(after, view), Names{kFinal}) << view;
    EXPECT_EQ(Files(after, "/rc" + view), Names{kFinal}) << view;
  }
  EXPECT_EQ(Files(after, "/rc/simple/"), (Names{kOld, kFinal}));
  // Superseded, still recorded: its file is still served to whoever holds its URL.
  EXPECT_EQ(Get(after, "/files/" + sha + "/" + kCandidate).status, 200);
}

TEST_F(ReleaseCandidateViewsTest, ACandidateNeverTakesAFinalWheelsPlace) {
  // A label template without torch gives both builds one file name: the candidate, built
  // later, must not replace the final's bytes in any view.
  constexpr char kSame[] = "rc_pkg-0.1.0-py3-none-any.whl";
  std::string final_sha = Wheel("2.12", kSame, false);
  Wheel("2.12", kSame, true, CandidateMetadata("2.12") + "X-Candidate: yes\n");
  Router r = MakeRouter();
  for (const std::string& view : kViews) {
    for (std::string root : {"", "/rc"}) {
      Response page = Get(r, root + view + "rc-pkg/", kJsonV1);
      ASSERT_EQ(page.status, 200) << root << view << page.body;
      const json::value listing = Json(page);
      const auto& files = listing.at("files").as_array();
      ASSERT_EQ(files.size(), 1u) << root << view;
      EXPECT_EQ(files[0].at("hashes").at("sha256").as_string(), final_sha) << root << view;
    }
  }
}

TEST_F(ReleaseCandidateViewsTest, HostilePathsUnderRcAreRefused) {
  Wheel("2.12", kCandidate, true);
  Router r = MakeRouter();
  EXPECT_EQ(Get(r, "/rc").status, 301);
  EXPECT_EQ(Get(r, "/rc/").status, 301);
  for (const char* path : {"/rc/rc/simple/", "/rc/rc/rc/simple/rc-pkg/", "/rc/files/x/y.whl",
                           "/rc/cu130-torch2.12/sm90/nosimple/", "/rc/../simple/rc-pkg/"}) {
    EXPECT_EQ(Get(r, path, kJsonV1).status, 404) << path;
  }
  // The placeholder of an RC view without a wheel for a GPU explains itself under /rc/ too.
  Response sm120 = Get(r, "/rc/cu130-torch2.12/sm120/simple/rc-pkg/", kJsonV1);
  ASSERT_EQ(sm120.status, 200) << sm120.body;
  std::string url(Json(sm120).at("files").at(0).at("url").as_string());
  EXPECT_TRUE(url.starts_with("/files/no-wheel/rc/cu130-torch2.12/sm120/")) << url;
  Response why = Get(r, url);
  EXPECT_EQ(why.status, 404);
  EXPECT_NE(why.body.find("built for: sm90"), std::string::npos) << why.body;
}

}  // namespace
}  // namespace farm::http::testing
