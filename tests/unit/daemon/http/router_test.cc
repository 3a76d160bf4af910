#include "daemon/http/router.h"

#include <set>

#include "common/fs.h"
#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

class RouterTest : public HttpFixture {};

TEST_F(RouterTest, HealthReadyAssetsAndUnknownRoutes) {
  Router r = MakeRouter();
  EXPECT_EQ(Get(r, "/healthz").status, 200);
  EXPECT_EQ(Get(r, "/readyz").body, "ready\n");
  Response page = Get(r, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"/app.js\">"), std::string::npos);
  EXPECT_NE(Get(r, "/app.js").body.find("ansiToHtml"), std::string::npos);
  EXPECT_EQ(Get(r, "/nope").status, 404);
  EXPECT_EQ(Get(r, "/api/v1/nope").status, 404);
  EXPECT_EQ(Get(r, "/api/v1/builds/abc").status, 404);
}

TEST_F(RouterTest, ServesAssetsFromWebRootWhenSet) {
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/app.js", "// from disk\n"));
  DashboardOptions o;
  o.web_root = dir_.path();
  Router r = MakeRouter(o);
  EXPECT_EQ(Get(r, "/app.js").body, "// from disk\n");
  EXPECT_EQ(Get(r, "/style.css").status, 404);
}

TEST_F(RouterTest, BuildsPaginateWithoutGapsOrDuplicates) {
  for (int i = 0; i < 120; ++i) AddBuild(1);
  Router r = MakeRouter();
  std::set<int64_t> seen;
  int64_t before = 0;
  int pages = 0;
  for (; pages < 10; ++pages) {
    auto v = Json(Get(r, "/api/v1/builds?limit=50" +
                             (before ? "&before=" + std::to_string(before) : std::string())));
    const auto& builds = v.at("builds").as_array();
    int64_t prev = INT64_MAX;
    for (const auto& b : builds) {
      int64_t id = b.at("id").as_int64();
      EXPECT_LT(id, prev);  // newest first
      prev = id;
      EXPECT_TRUE(seen.insert(id).second);
      EXPECT_EQ(b.at("jobs").at("total").as_int64(), 1);
    }
    before = v.at("next_before").as_int64();
    if (before == 0) break;
    EXPECT_EQ(builds.size(), 50u);
  }
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(seen.size(), 120u);
  // Limits are clamped: 0 becomes 1, huge becomes the maximum.
  EXPECT_EQ(Json(Get(r, "/api/v1/builds?limit=0")).at("builds").as_array().size(), 1u);
}

TEST_F(RouterTest, BuildAndJobShowTimingsAndState) {
  int64_t build_id = 0;
  auto ids = AddBuild(2, "13.0", "2.8", &build_id);
  clock_.Advance(5000);
  Start(ids[0]);
  clock_.Advance(7000);
  Router r = MakeRouter();
  auto b = Json(Get(r, "/api/v1/builds/" + std::to_string(build_id)));
  EXPECT_EQ(b.at("state").as_string(), "BUILD_RUNNING");
  const auto& jobs = b.at("jobs").as_array();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].at("state").as_string(), "JOB_RUNNING");
  EXPECT_EQ(jobs[0].at("waited_ms").as_int64(), 5000);
  EXPECT_EQ(jobs[0].at("ran_ms").as_int64(), 7000);
  EXPECT_EQ(jobs[1].at("waited_ms").as_int64(), 12000);  // still pending
  EXPECT_EQ(jobs[0].at("variant").as_string(), "cu130-torch2.8");
  auto j = Json(Get(r, "/api/v1/jobs/" + std::to_string(ids[0])));
  EXPECT_EQ(j.at("attempts").as_array().size(), 1u);
  EXPECT_EQ(j.at("attempts").as_array()[0].at("running").as_bool(), true);
  EXPECT_EQ(Get(r, "/api/v1/jobs/99999").status, 404);
  auto ov = Json(Get(r, "/api/v1/overview"));
  EXPECT_EQ(ov.at("queue_depth").as_int64(), 1);
  ASSERT_EQ(ov.at("running").as_array().size(), 1u);
  EXPECT_EQ(ov.at("running").as_array()[0].at("recipe_name").as_string(), "attn-example");
}

TEST_F(RouterTest, BuildWithRejectedCellsListsThem) {
  // A build whose matrix dropped cells: its page was read from a destroyed temporary.
  store::BuildRow b;
  b.recipe_name = "attn-example";
  b.submitted_by = "test";
  b.rejected_cells =
      "py3.9 cuda12.1 9.0a: CUDA 12.1 cannot emit sm_90a\npy3.13 cuda13.0 8.0: no torch\n";
  std::vector<store::JobRow> jobs;
  ASSERT_OK(store_->CreateBuild(&b, &jobs));
  Router r = MakeRouter();
  for (int i = 0; i < 3; ++i) {  // the dashboard polls it
    auto v = Json(Get(r, "/api/v1/builds/" + std::to_string(b.id)));
    const auto& rejected = v.at("rejected_cells").as_array();
    ASSERT_EQ(rejected.size(), 2u);
    EXPECT_EQ(rejected[0].as_string(), "py3.9 cuda12.1 9.0a: CUDA 12.1 cannot emit sm_90a");
    EXPECT_EQ(v.at("jobs").as_array().size(), 0u);
  }
}

TEST_F(RouterTest, LogPagesDownloadAndEventStream) {
  auto ids = AddBuild(1);
  Start(ids[0]);
  std::vector<store::LogLineRow> lines;
  for (int i = 1; i <= 5; ++i) lines.push_back({i, 1, "line " + std::to_string(i), 0});
  ASSERT_OK(store_->AppendLogLines(ids[0], 1, lines).status());
  Router r = MakeRouter();
  std::string base = "/api/v1/jobs/" + std::to_string(ids[0]);
  auto page = Json(Get(r, base + "/log?after=3"));
  ASSERT_EQ(page.at("lines").as_array().size(), 2u);
  EXPECT_EQ(page.at("lines").as_array()[0].at("seq").as_int64(), 4);
  EXPECT_FALSE(page.at("finished").as_bool());
  EXPECT_EQ(Get(r, base + "/log.txt").body, "line 1\nline 2\nline 3\nline 4\nline 5\n");

  Response sse = Get(r, base + "/log/stream?after=4");
  EXPECT_EQ(sse.kind, BodyKind::kEvents);
  EXPECT_EQ(sse.content_type, "text/event-stream");
  EXPECT_NE(sse.body.find("id: 5\nevent: line\n"), std::string::npos);
  EXPECT_EQ(sse.body.find("id: 4\n"), std::string::npos);
  EXPECT_EQ(sse.sse_after_seq, 5);
  LogPoll idle = r.PollLog(ids[0], 1, 5);
  EXPECT_TRUE(idle.chunk.empty());
  EXPECT_FALSE(idle.done);
  ASSERT_OK(store_->AppendLogLines(ids[0], 1, {{6, 1, "\x1b[32mdone\x1b[0m", 0}}).status());
  Finish(ids[0]);
  LogPoll last = r.PollLog(ids[0], 1, 5);
  EXPECT_NE(last.chunk.find("id: 6\n"), std::string::npos);
  EXPECT_NE(last.chunk.find("event: end\ndata: {\"state\":\"JOB_SUCCEEDED\""), std::string::npos);
  EXPECT_TRUE(last.done);
  // A stream opened on an ended attempt is a plain body that ends at once.
  Request req = MakeRequest("GET", base + "/log/stream");
  req.last_event_id = "6";
  Response ended = r.Handle(req);
  EXPECT_EQ(ended.kind, BodyKind::kString);
  EXPECT_NE(ended.body.find("event: end"), std::string::npos);
}

TEST_F(RouterTest, TokensGuardReadsWhenNotPublicAndCancelAlways) {
  int64_t build_id = 0;
  AddBuild(2, "13.0", "2.8", &build_id);
  auto viewer = auth_->Create("viewer", "v");
  auto submitter = auth_->Create("submitter", "test");  // the builds' owner
  ASSERT_OK(viewer.status());
  ASSERT_OK(submitter.status());
  DashboardOptions o;
  o.public_read = false;
  Router r = MakeRouter(o);
  EXPECT_EQ(Get(r, "/api/v1/overview").status, 401);
  EXPECT_EQ(Get(r, "/metrics").status, 401);
  EXPECT_EQ(Get(r, "/simple/").status, 401);
  EXPECT_EQ(Get(r, "/healthz").status, 200);  // liveness needs no token
  Request read = MakeRequest("GET", "/api/v1/overview");
  read.authorization = "Bearer " + viewer.value();
  EXPECT_EQ(r.Handle(read).status, 200);

  std::string cancel = "/api/v1/builds/" + std::to_string(build_id) + "/cancel";
  Request post = MakeRequest("POST", cancel);
  EXPECT_EQ(r.Handle(post).status, 401);
  post.authorization = "Bearer " + viewer.value();
  EXPECT_EQ(r.Handle(post).status, 403);
  EXPECT_EQ(Get(r, cancel).status, 401);  // reads need a token here too
  post.authorization = "Bearer " + submitter.value();
  Response done = r.Handle(post);
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(Json(done).at("state").as_string(), "BUILD_CANCELLED");
  post.path = "/api/v1/builds/424242/cancel";
  EXPECT_EQ(r.Handle(post).status, 404);
  Router open = MakeRouter();
  EXPECT_EQ(open.Handle(MakeRequest("POST", cancel)).status, 401);  // public_read: still a token
  EXPECT_EQ(open.Handle(MakeRequest("DELETE", "/api/v1/overview")).status, 405);
}

TEST_F(RouterTest, WorkersListGpusAndRunningJobs) {
  farm::v1::Capabilities caps;
  caps.set_hostname("h1"), caps.set_platform("linux_x86_64");
  auto* g = caps.add_gpus();
  g->set_name("NVIDIA H100"), g->set_cc_major(9), g->set_cc_minor(0);
  caps.add_toolkits()->set_version("13.0");
  ASSERT_OK(
      store_->UpsertWorker({"w1", "worker-1", caps.SerializeAsString(), store::WorkerState::kBusy,
                            clock_.NowUnixMs(), clock_.NowUnixMs()}));
  auto ids = AddBuild(1);
  Start(ids[0]);
  clock_.Advance(3000);
  Router r = MakeRouter();
  auto v = Json(Get(r, "/api/v1/workers"));
  const auto& w = v.at("workers").as_array().at(0);
  EXPECT_EQ(w.at("hostname").as_string(), "h1");
  EXPECT_EQ(w.at("gpus").as_array()[0].at("compute_capability").as_string(), "9.0");
  EXPECT_EQ(w.at("heartbeat_age_ms").as_int64(), 3000);
  EXPECT_EQ(w.at("running_jobs").as_array()[0].as_int64(), ids[0]);
}

TEST_F(RouterTest, RetryNeedsASubmitterAndDrainAnAdmin) {
  auto ids = AddBuild(1);
  Start(ids[0]);
  Finish(ids[0], store::kCauseBuildFailed);
  ASSERT_OK(store_->UpsertWorker({"w1", "worker-1", "", store::WorkerState::kIdle, 1, 1}));
  auto submitter = auth_->Create("submitter", "test");  // the build's owner
  auto admin = auth_->Create("admin", "a");
  Router r = MakeRouter();
  Request retry = MakeRequest("POST", "/api/v1/jobs/" + std::to_string(ids[0]) + "/retry");
  EXPECT_EQ(r.Handle(retry).status, 401);
  retry.authorization = "Bearer " + submitter.value();
  Response queued = r.Handle(retry);
  ASSERT_EQ(queued.status, 200) << queued.body;
  EXPECT_EQ(Json(queued).at("state").as_string(), "JOB_PENDING");
  EXPECT_EQ(r.Handle(retry).status, 409);  // pending: nothing to retry

  Request drain = MakeRequest("POST", "/api/v1/workers/w1/drain");
  drain.authorization = "Bearer " + submitter.value();
  EXPECT_EQ(r.Handle(drain).status, 403);
  drain.authorization = "Bearer " + admin.value();
  ASSERT_EQ(r.Handle(drain).status, 200);
  EXPECT_TRUE(store_->GetWorker("w1")->drain_requested);
  drain.path = "/api/v1/workers/w1/undrain";
  ASSERT_EQ(r.Handle(drain).status, 200);
  EXPECT_FALSE(store_->GetWorker("w1")->drain_requested);
  // By the name every listing shows, as farmctl drain takes it (builds::Control).
  drain.path = "/api/v1/workers/worker-1/drain";
  ASSERT_EQ(r.Handle(drain).status, 200);
  EXPECT_TRUE(store_->GetWorker("w1")->drain_requested);
  drain.path = "/api/v1/workers/no-such-worker/drain";
  EXPECT_EQ(r.Handle(drain).status, 404);
  // Each request by a known principal is recorded once, the refusal included.
  audit_->Flush();
  auto records = store_->ListAudit({.limit = 100});
  ASSERT_OK(records.status());
  int drains = 0;
  for (const auto& rec : *records) drains += rec.action.starts_with("worker.");
  EXPECT_EQ(drains, 5);
}

// The id of an action route is what stands between its prefix and its action; anything
// else there is no id, and a path that only looks like one is no route.
TEST_F(RouterTest, ActionRoutesTakeOnlyAnIdBetweenPrefixAndAction) {
  auto admin = auth_->Create("admin", "a");
  Router r = MakeRouter();
  for (const char* path :
       {"/api/v1/builds/cancel", "/api/v1/builds/1/x/cancel", "/api/v1/builds//cancel",
        "/api/v1/jobs/retry", "/api/v1/jobs/-1/retry"}) {
    Request bad = MakeRequest("POST", path);
    bad.authorization = "Bearer " + admin.value();
    Response answer = r.Handle(bad);
    EXPECT_EQ(answer.status, 400) << path << ": " << answer.body;
  }
  Request get = MakeRequest("GET", "/api/v1/builds/1/cancel");
  EXPECT_EQ(r.Handle(get).status, 405);
  Request unknown = MakeRequest("POST", "/api/v1/workers/nobody/undrain");
  unknown.authorization = "Bearer " + admin.value();
  EXPECT_EQ(r.Handle(unknown).status, 404);
}

TEST(HttpMessageTest, ParsesTargetsAndEscapes) {
  Request r = MakeRequest("GET", "/a%20b?x=1&y=two+words&z=%41");
  EXPECT_EQ(r.path, "/a b");
  EXPECT_EQ(r.query["x"], "1");
  EXPECT_EQ(r.query["y"], "two words");
  EXPECT_EQ(r.query["z"], "A");
  EXPECT_EQ(PercentDecode("%zz%4", false), "%zz%4");
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(HttpStatusFor(StatusCode::kPermissionDenied), 403);
}

TEST_F(RouterTest, FailedPublicationsShowOnBuildsAndInMetrics) {
  int64_t build_id = 0;
  auto ids = AddBuild(1, "13.0", "", &build_id);
  Start(ids[0]);
  AddWheel(ids[0], "attn_example-0.1.0+cu130-cp311-cp311-linux_x86_64.whl",
           "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0+cu130\n", 3);
  Finish(ids[0]);
  auto artifacts = store_->ListArtifacts(ids[0]);
  ASSERT_OK(artifacts.status());
  store::PublicationRow asset{.build_id = build_id,
                              .artifact_id = artifacts->at(0).id,
                              .target = "github",
                              .kind = "asset",
                              .repo = "o/r",
                              .ref = "v1"};
  asset.state = store::PublicationState::kFailed;
  asset.error = "asset already exists (token ghp_secret in a URL?)";
  store::PublicationRow file = asset;
  file.target = "hf", file.kind = "file", file.state = store::PublicationState::kPublished,
  file.error = "";
  ASSERT_OK(store_->EnqueuePublications(artifacts->at(0).id, "queued", {asset, file},
                                        clock_.NowUnixMs()));
  Router r = MakeRouter();
  auto list = Json(Get(r, "/api/v1/builds"));
  const auto& p = list.at("builds").as_array()[0].at("publishing");
  EXPECT_EQ(p.at("states").at("failed").as_int64(), 1);
  EXPECT_EQ(p.at("states").at("published").as_int64(), 1);
  EXPECT_NE(std::string(p.at("error").as_string()).find("asset already exists"), std::string::npos);
  auto build = Json(Get(r, "/api/v1/builds/" + std::to_string(build_id)));
  ASSERT_EQ(build.at("publications").as_array().size(), 2u);
  std::string metrics = Get(r, "/metrics").body;
  EXPECT_NE(metrics.find("farm_publish_failures_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("farm_publications{state=\"published\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace farm::http::testing
