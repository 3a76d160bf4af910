// /api/v1/coverage and /feeds/wheels.atom over a real store: states, filters, the feed's
// escaping of what builds write, and who may read them.
#include "daemon/http/rest/api_coverage.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

class CoverageRoutesTest : public HttpFixture {
 protected:
  // Three jobs of one build: a validated wheel, a failed build saying `error`, one queued.
  std::vector<int64_t> ThreeCells(const std::string& error) {
    std::vector<int64_t> ids = AddBuild(3);
    Start(ids[0]);
    AddWheel(ids[0], "attn_example-1.0-cp311-cp311-linux_x86_64.whl",
             "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0\n", store::kValidationPassed);
    Finish(ids[0]);
    Start(ids[1]);
    store::CompletionReport r{.job_id = ids[1],
                              .attempt = 1,
                              .worker_id = "w1",
                              .cause = store::kCauseBuildFailed,
                              .detail = error};
    EXPECT_OK(store_->CompleteAttempt(r, clock_.NowUnixMs()).status());
    return ids;
  }
};

TEST_F(CoverageRoutesTest, CellsWithStatesAndFilters) {
  std::vector<int64_t> ids = ThreeCells("exit code 3");
  Router r = MakeRouter();
  Response all = Get(r, "/api/v1/coverage");
  ASSERT_EQ(all.status, 200) << all.body;
  auto body = Json(all).as_object();
  const auto& cells = body.at("cells").as_array();
  ASSERT_EQ(cells.size(), 3u) << all.body;
  std::map<int64_t, std::string> state_of_job;
  for (const auto& c : cells) {
    state_of_job[c.at("job_id").as_int64()] = std::string(c.at("state").as_string());
    EXPECT_EQ(c.at("package").as_string(), "attn-example");
    EXPECT_TRUE(c.at("release_to_wheel_seconds").is_null());
  }
  EXPECT_EQ(state_of_job[ids[0]], "validated");
  EXPECT_EQ(state_of_job[ids[1]], "failed");
  EXPECT_EQ(state_of_job[ids[2]], "in_progress");
  EXPECT_EQ(body.at("counts").at("validated").as_int64(), 1);
  Response failed = Get(r, "/api/v1/coverage?state=failed");
  ASSERT_EQ(Json(failed).at("cells").as_array().size(), 1u);
  EXPECT_EQ(Json(failed).at("cells").as_array()[0].at("cause").as_string(), "exit code 3");
  EXPECT_EQ(Json(Get(r, "/api/v1/coverage?arch=1")).at("cells").as_array().size(), 1u);
  EXPECT_EQ(Json(Get(r, "/api/v1/coverage?package=other")).at("cells").as_array().size(), 0u);
  Response bad = Get(r, "/api/v1/coverage?state=%3Cb%3E");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body.find("<b>"), std::string::npos);
}

TEST_F(CoverageRoutesTest, TheFeedEscapesWhatTheBuildWrote) {
  std::vector<int64_t> ids = ThreeCells("</summary><script>alert(1)</script>\x01\xff");
  Start(ids[2]);
  Finish(ids[2], store::kCauseBuildFailed);  // the build has ended, failed
  Router r = MakeRouter();
  Response feed = Get(r, kWheelsFeedPath);
  ASSERT_EQ(feed.status, 200) << feed.body;
  EXPECT_EQ(feed.content_type, "application/atom+xml; charset=utf-8");
  EXPECT_EQ(feed.body.find("<script>"), std::string::npos) << feed.body;
  EXPECT_NE(feed.body.find("&lt;script&gt;"), std::string::npos) << feed.body;
  EXPECT_EQ(feed.body.find('\x01'), std::string::npos);
  EXPECT_NE(feed.body.find("<id>urn:farm:build_failed:1</id>"), std::string::npos) << feed.body;
  EXPECT_NE(feed.body.find("<category term=\"wheel_validated\"/>"), std::string::npos);
  DashboardOptions o;
  o.public_url = "https://farm.example/";
  Router with_url = MakeRouter(o);
  EXPECT_NE(Get(with_url, kWheelsFeedPath).body.find("href=\"https://farm.example/#/job/"),
            std::string::npos);
}

TEST_F(CoverageRoutesTest, PrivateReadNeedsATokenAndNothingIsWritten) {
  DashboardOptions o;
  o.public_read = false;
  Router r = MakeRouter(o);
  EXPECT_EQ(Get(r, kWheelsFeedPath).status, 401);
  EXPECT_EQ(Get(r, "/api/v1/coverage").status, 401);
  Router open = MakeRouter();
  EXPECT_EQ(open.Handle(MakeRequest("POST", kWheelsFeedPath)).status, 405);
  EXPECT_EQ(open.Handle(MakeRequest("POST", "/api/v1/coverage")).status, 405);
}

}  // namespace
}  // namespace farm::http::testing
