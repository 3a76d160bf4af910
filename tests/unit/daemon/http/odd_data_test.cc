// Every route of the dashboard, JSON API, metrics and package index, fed odd but legal data:
// builds with rejected cells and no jobs, unicode names, 10,000-line logs, huge and
// negative page sizes and ids, empty stores. Each answer must be well-formed (JSON parses,
// status in range) and say what it should; nothing may crash (the sanitizer build runs
// these too).
#include <cstdint>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "daemon/http/router.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

constexpr char kUnicodeName[] = "注意力-Ünïcödé-🚀";

class OddDataTest : public HttpFixture {
 protected:
  // A build of no jobs whose matrix rejected every cell, under a unicode recipe name.
  int64_t AddRejectedOnlyBuild() {
    store::BuildRow b;
    b.recipe_name = kUnicodeName;
    b.submitted_by = "ünï <script>alert(1)</script>";
    farm::v1::Recipe recipe;
    recipe.set_name(kUnicodeName);
    recipe.set_version("0.1.0");
    recipe.set_yaml(std::string("name: ") + kUnicodeName + "\n");
    b.recipe = recipe.SerializeAsString();
    b.rejected_cells =
        "py3.11 cuda12.1 12.0a: CUDA 12.1 cannot emit sm_120a\n"
        "py3.11 cuda12.1 12.1a: CUDA 12.1 cannot emit sm_121a — “quoted”\n";
    b.created_ms = clock_.NowUnixMs();
    std::vector<store::JobRow> jobs;
    EXPECT_OK(store_->CreateBuild(&b, &jobs));
    return b.id;
  }

  // Every status a route may answer with is a real HTTP status, and JSON bodies parse.
  void ExpectWellFormed(const Response& r, const std::string& target) {
    EXPECT_GE(r.status, 200) << target;
    EXPECT_LT(r.status, 600) << target;
    if (r.content_type.starts_with("application/json") ||
        r.content_type.starts_with("application/vnd.pypi.simple.v1+json")) {
      json::error_code ec;
      json::parse(r.body, ec);
      EXPECT_FALSE(ec) << target << ": " << r.body.substr(0, 200);
    }
    // Request paths may decode to any bytes; what declares UTF-8 must be UTF-8.
    if (r.content_type.find("json") != std::string::npos ||
        r.content_type.find("charset=utf-8") != std::string::npos) {
      EXPECT_TRUE(IsValidUtf8(r.body)) << target;
    }
  }

  Response Check(Router& r, const std::string& method, const std::string& target,
                 const std::string& accept = "") {
    Request req = MakeRequest(method, target);
    req.accept = accept;
    Response resp = r.Handle(req);
    ExpectWellFormed(resp, method + " " + target);
    return resp;
  }
};

TEST_F(OddDataTest, EveryReadRouteAnswersOnAnEmptyStore) {
  Router r = MakeRouter();
  for (const char* target : {"/", "/index.html", "/app.js", "/style.css", "/healthz", "/readyz",
                             "/metrics", "/api/v1/overview", "/api/v1/builds", "/api/v1/workers",
                             "/api/v1/chart", "/api/v1/schedules", "/simple/"}) {
    Response resp = Check(r, "GET", target);
    EXPECT_EQ(resp.status, 200) << target;
  }
  auto builds = Json(Check(r, "GET", "/api/v1/builds"));
  EXPECT_TRUE(builds.at("builds").as_array().empty());
  EXPECT_EQ(builds.at("next_before").as_int64(), 0);
  EXPECT_TRUE(Json(Check(r, "GET", "/api/v1/workers")).at("workers").as_array().empty());
  EXPECT_TRUE(Json(Check(r, "GET", "/api/v1/schedules")).at("schedules").as_array().empty());
  EXPECT_EQ(Check(r, "GET", "/simple/", "application/vnd.pypi.simple.v1+json").status, 200);
  for (const char* missing :
       {"/api/v1/builds/1", "/api/v1/jobs/1", "/api/v1/jobs/1/log", "/api/v1/jobs/1/log.txt",
        "/api/v1/jobs/1/log/stream", "/api/v1/schedules/1", "/simple/nothing/", "/cu130/simple/",
        "/files/00/x.whl"}) {
    EXPECT_EQ(Check(r, "GET", missing).status, 404) << missing;
  }
}

TEST_F(OddDataTest, BuildWithoutJobsAndOnlyRejectedCellsOnEveryPage) {
  int64_t id = AddRejectedOnlyBuild();
  Router r = MakeRouter();
  auto b = Json(Check(r, "GET", "/api/v1/builds/" + std::to_string(id)));
  EXPECT_EQ(b.at("recipe_name").as_string(), kUnicodeName);
  ASSERT_EQ(b.at("rejected_cells").as_array().size(), 2u);
  EXPECT_EQ(b.at("rejected_cells").as_array()[1].as_string(),
            "py3.11 cuda12.1 12.1a: CUDA 12.1 cannot emit sm_121a — “quoted”");
  EXPECT_TRUE(b.at("jobs").as_array().empty());
  EXPECT_EQ(b.at("job_counts").at("total").as_int64(), 0);

  auto list = Json(Check(r, "GET", "/api/v1/builds"));
  ASSERT_EQ(list.at("builds").as_array().size(), 1u);
  EXPECT_EQ(list.at("builds").as_array()[0].at("recipe_name").as_string(), kUnicodeName);
  Check(r, "GET", "/api/v1/overview");
  Check(r, "GET", "/api/v1/chart");
  Response metrics = Check(r, "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  // Another submitter is refused with the odd owner's name in well-formed JSON; an
  // admin's cancel of a build without jobs is accepted and leaves a consistent page.
  Request cancel = MakeRequest("POST", "/api/v1/builds/" + std::to_string(id) + "/cancel");
  auto submitter = auth_->Create("submitter", "s");
  ASSERT_OK(submitter.status());
  cancel.authorization = "Bearer " + submitter.value();
  Response refused = r.Handle(cancel);
  ExpectWellFormed(refused, "refused cancel");
  EXPECT_EQ(refused.status, 403) << refused.body;
  auto admin = auth_->Create("admin", "a");
  ASSERT_OK(admin.status());
  cancel.authorization = "Bearer " + admin.value();
  Response cancelled = r.Handle(cancel);
  ExpectWellFormed(cancelled, "cancel");
  EXPECT_EQ(cancelled.status, 200) << cancelled.body;
}

TEST_F(OddDataTest, HugeNegativeAndMalformedPagingAndIds) {
  for (int i = 0; i < 3; ++i) AddBuild(1);
  Router r = MakeRouter();
  for (const char* q :
       {"limit=9223372036854775807", "limit=99999999999999999999999", "limit=-5", "limit=abc",
        "limit=", "before=-1", "before=9223372036854775807", "before=99999999999999999999",
        "before=1e9", "limit=1&limit=2", "%ff%fe=%00", "limit=%E2%88%9E"}) {
    Response resp = Check(r, "GET", std::string("/api/v1/builds?") + q);
    EXPECT_EQ(resp.status, 200) << q;
    auto n = Json(resp).at("builds").as_array().size();
    EXPECT_LE(n, 3u) << q;
  }
  // The largest page is clamped, the smallest is one.
  EXPECT_EQ(Json(Check(r, "GET", "/api/v1/builds?limit=9223372036854775807"))
                .at("builds")
                .as_array()
                .size(),
            3u);
  EXPECT_EQ(Json(Check(r, "GET", "/api/v1/builds?limit=-5")).at("builds").as_array().size(), 1u);
  for (const char* target :
       {"/api/v1/builds/9223372036854775807", "/api/v1/builds/99999999999999999999999",
        "/api/v1/builds/-1", "/api/v1/builds/0", "/api/v1/builds/%F0%9F%9A%80",
        "/api/v1/builds/%FF%FE", "/api/v1/jobs/%C0%AF/log", "/api/v1/schedules/%ED%A0%80",
        "/api/v1/jobs/9223372036854775807", "/api/v1/jobs/-3/log",
        "/api/v1/jobs/1/log/../../etc/passwd", "/api/v1/schedules/99999999999999999999"}) {
    Response resp = Check(r, "GET", target);
    EXPECT_TRUE(resp.status == 404 || resp.status == 400) << target << " " << resp.body;
  }
  Response log =
      Check(r, "GET", "/api/v1/jobs/1/log?after=-9223372036854775807&limit=-1&attempt=-4");
  EXPECT_LT(log.status, 500) << log.body;
  Check(r, "GET", "/api/v1/jobs/1/log?after=9223372036854775807&limit=9223372036854775807");
}

TEST_F(OddDataTest, TenThousandLineLogWithUnicodeAndControlBytes) {
  auto ids = AddBuild(1);
  Start(ids[0]);
  std::vector<store::LogLineRow> lines;
  for (int i = 1; i <= 10'000; ++i) {
    std::string text = i % 3 == 0   ? "编译 " + std::to_string(i) + " ✓"
                       : i % 3 == 1 ? "\x1b[31merror\x1b[0m <b>&amp;</b> \t" + std::to_string(i)
                                    : std::string(i % 7 == 0 ? 4000 : 10, 'x');
    lines.push_back({i, i % 2 ? 1 : 2, text, clock_.NowUnixMs()});
  }
  ASSERT_OK(store_->AppendLogLines(ids[0], 1, lines).status());
  Router r = MakeRouter();
  std::string base = "/api/v1/jobs/" + std::to_string(ids[0]);
  // Pages never exceed the limit and carry on from `after` without gaps.
  int64_t after = 0;
  int64_t seen = 0;
  for (int page = 0; page < 100 && seen < 10'000; ++page) {
    auto v = Json(Check(r, "GET", base + "/log?limit=100000&after=" + std::to_string(after)));
    const auto& got = v.at("lines").as_array();
    ASSERT_FALSE(got.empty());
    for (const auto& l : got) EXPECT_EQ(l.at("seq").as_int64(), ++after);
    seen += static_cast<int64_t>(got.size());
  }
  EXPECT_EQ(seen, 10'000);
  Response text = Check(r, "GET", base + "/log.txt");
  EXPECT_EQ(text.status, 200);
  EXPECT_NE(text.body.find("编译 9999 ✓\n"), std::string::npos);
  Response sse = Check(r, "GET", base + "/log/stream");
  EXPECT_EQ(sse.kind, BodyKind::kEvents);
  auto job = Json(Check(r, "GET", base));
  EXPECT_EQ(job.at("id").as_int64(), ids[0]);
}

TEST_F(OddDataTest, UnicodeWorkerNamesDrainAndHugeCapabilities) {
  farm::v1::Capabilities caps;
  caps.set_hostname(kUnicodeName);
  caps.set_platform("linux_aarch64");
  for (int i = 0; i < 64; ++i) {
    auto* g = caps.add_gpus();
    g->set_index(i), g->set_name("GPU “" + std::to_string(i) + "”"), g->set_cc_major(12);
    g->set_cc_minor(1), g->set_memory_bytes(INT64_MAX);
  }
  caps.set_ram_bytes(INT64_MAX);
  ASSERT_OK(
      store_->UpsertWorker({"w-ünï", kUnicodeName, caps.SerializeAsString(),
                            store::WorkerState::kIdle, clock_.NowUnixMs(), clock_.NowUnixMs()}));
  Router r = MakeRouter();
  auto v = Json(Check(r, "GET", "/api/v1/workers"));
  const auto& w = v.at("workers").as_array().at(0);
  EXPECT_EQ(w.at("name").as_string(), kUnicodeName);
  EXPECT_EQ(w.at("gpus").as_array().size(), 64u);
  auto admin = auth_->Create("admin", "a");
  ASSERT_OK(admin.status());
  Request drain = MakeRequest("POST", "/api/v1/workers/w-%C3%BCn%C3%AF/drain");
  drain.authorization = "Bearer " + admin.value();
  Response drained = r.Handle(drain);
  ExpectWellFormed(drained, "drain");
  EXPECT_EQ(drained.status, 200) << drained.body;
  drain.path = "/api/v1/workers/%F0%9F%9A%80/undrain";
  EXPECT_EQ(r.Handle(drain).status, 404);
  drain.path = "/api/v1/workers//drain";
  EXPECT_EQ(r.Handle(drain).status, 404);
  Check(r, "GET", "/api/v1/overview");
  Check(r, "GET", "/metrics");
}

TEST_F(OddDataTest, IndexWithUnicodeProjectRequestsAndOddAcceptHeaders) {
  auto ids = AddBuild(1);
  Start(ids[0]);
  Finish(ids[0]);
  AddWheel(ids[0], "attn_example-0.1.0-cp311-cp311-linux_x86_64.whl",
           "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0\n", 3);
  Router r = MakeRouter();
  for (const std::string& target : std::vector<std::string>{
           "/simple/attn-example/", "/simple/ATTN_example", "/simple/%E6%B3%A8%E6%84%8F/",
           "/simple/-/", "/simple//", "/simple/a/b/c/", "/cu130-torch2.8/simple/",
           "/cu130-torch2.8/simple/attn-example/", "/%E2%9C%93/simple/", "/files/zz/../../x.whl",
           "/simple/%FF%FE/", "/%C0%AF/simple/", "/simple/caf%E9/",
           "/files/" + std::string(64, 'a') + "/attn_example-0.1.0-cp311-cp311-linux_x86_64.whl"}) {
    Response resp = Check(r, "GET", target);
    EXPECT_NE(resp.status, 500) << target << " " << resp.body;
  }
  for (const std::string& accept : std::vector<std::string>{
           "", "*/*", "application/vnd.pypi.simple.v1+json;q=0", "text/html;q=abc",
           "application/json, text/html;q=0.1", ",,,", std::string(10'000, ',')}) {
    Response resp = Check(r, "GET", "/simple/attn-example/", accept);
    EXPECT_TRUE(resp.status == 200 || resp.status == 406) << accept << " " << resp.status;
  }
}

TEST_F(OddDataTest, WritesRefuseWrongMethodsAndAnswerOddIds) {
  auto ids = AddBuild(1);
  auto submitter = auth_->Create("submitter", "test");  // the owner of AddBuild's builds
  ASSERT_OK(submitter.status());
  Router r = MakeRouter();
  for (const char* target : {"/api/v1/builds/1/cancel", "/api/v1/jobs/1/retry",
                             "/api/v1/workers/w1/drain", "/api/v1/schedules/1/pause"}) {
    EXPECT_EQ(Check(r, "GET", target).status, 405) << target;
    EXPECT_EQ(Check(r, "PUT", target).status, 405) << target;
  }
  for (const char* target :
       {"/api/v1/builds/99999999999999999999/cancel", "/api/v1/builds/abc/cancel",
        "/api/v1/jobs/-1/retry", "/api/v1/jobs/99999999999999999999/retry"}) {
    Request post = MakeRequest("POST", target);
    post.authorization = "Bearer " + submitter.value();
    Response resp = r.Handle(post);
    ExpectWellFormed(resp, target);
    EXPECT_GE(resp.status, 400) << target;
    EXPECT_LT(resp.status, 500) << target;
  }
  // Retrying a pending job is refused, not a server error.
  Request retry = MakeRequest("POST", "/api/v1/jobs/" + std::to_string(ids[0]) + "/retry");
  retry.authorization = "Bearer " + submitter.value();
  Response refused = r.Handle(retry);
  ExpectWellFormed(refused, "retry");
  EXPECT_EQ(refused.status, 409) << refused.body;
}

TEST_F(OddDataTest, SchedulesWithUnicodeNamesAndHugeRunCounts) {
  Router r = MakeRouter();
  store::ScheduleRow s;
  s.name = kUnicodeName;
  s.recipe_name = kUnicodeName;
  s.cron = "0 3 * * *";
  s.time_zone = "Asia/Kathmandu";
  s.next_fire_ms = clock_.NowUnixMs() + 1000;
  ASSERT_OK(store_->InsertSchedule(&s));
  auto list = Json(Check(r, "GET", "/api/v1/schedules?runs=9223372036854775807"));
  ASSERT_EQ(list.at("schedules").as_array().size(), 1u);
  EXPECT_EQ(list.at("schedules").as_array()[0].at("name").as_string(), kUnicodeName);
  Check(r, "GET", "/api/v1/schedules/" + std::to_string(s.id) + "?runs=-1");
}

}  // namespace
}  // namespace farm::http::testing
