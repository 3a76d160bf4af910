// The dashboard's schedule routes through Router over a real SQLite store under a fake
// clock: exact fire times, last run and reasons, 400/404/405/401/503, pause and resume,
// and run-now through a real ScheduleRunner whose submitter stores the build directly.
#include <gtest/gtest.h>

#include "daemon/builds/build_key.h"
#include "daemon/builds/schedule_control.h"
#include "daemon/cron/runner.h"
#include "daemon/http/rest/api_schedules.h"
#include "daemon/quota/quota.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

// 2026-03-27T12:00:00Z, a Friday: "0 3 * * *" in Europe/Berlin (CET, UTC+1) fires next at
// 2026-03-28T02:00:00Z.
constexpr int64_t kNow = 1'774'612'800'000;
constexpr int64_t kNextBerlin3 = 1'774'663'200'000;

class NoResolver final : public cron::SourceResolver {
 public:
  Result<std::string> ResolveGitRef(const std::string&, const std::string& ref) override {
    return Status::Unavailable("https://u:hunter2-secret@example.invalid/r.git: no " + ref);
  }
};

class StoreSubmitter final : public cron::BuildSubmitter {
 public:
  StoreSubmitter(store::Store* store, const Clock* clock) : store_(store), clock_(clock) {}
  Result<int64_t> SubmitScheduled(const farm::v1::SubmitBuildRequest&, const std::string& who,
                                  store::ScheduleRunRow* run, int64_t next_fire_ms) override {
    store::BuildRow build{
        .recipe_name = "attn-example", .submitted_by = who, .created_ms = clock_->NowUnixMs()};
    std::vector<store::JobRow> jobs{store::JobRow{.cell = "", .created_ms = clock_->NowUnixMs()}};
    store::BuildLinks links{.run = *run, .next_fire_ms = next_fire_ms};
    FARM_RETURN_IF_ERROR(store_->CreateBuildLinked(&build, &jobs, &links));
    *run = *links.run;
    return build.id;
  }
  std::string InputsDigest(const farm::v1::SubmitBuildRequest& req) const override {
    return builds::ScheduleInputsDigest(req);
  }

 private:
  store::Store* store_;
  const Clock* clock_;
};

class ScheduleRoutesTest : public HttpFixture {
 protected:
  void SetUp() override {
    HttpFixture::SetUp();
    clock_.Set(kNow);
    submitter_ = std::make_unique<StoreSubmitter>(store_.get(), &clock_);
    runner_ =
        std::make_unique<cron::ScheduleRunner>(store_.get(), &clock_, &resolver_, submitter_.get());
    auto token = auth_->Create("submitter", "s");
    ASSERT_OK(token.status());
    bearer_ = "Bearer " + token.value();
  }

  int64_t AddSchedule(const std::string& name, bool git = false) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml("name: attn-example\n");
    if (git) {
      req.mutable_source()->mutable_git()->set_url(
          "https://u:hunter2-secret@example.invalid/r.git");
      req.mutable_source()->mutable_git()->set_ref("main");
    }
    store::ScheduleRow row{.name = name,
                           .recipe_name = "attn-example",
                           .request = req.SerializeAsString(),
                           .cron = "0 3 * * *",
                           .time_zone = "Europe/Berlin",
                           .next_fire_ms = kNextBerlin3,
                           .created_by = "s",
                           .created_ms = kNow};  // bearer_'s
    EXPECT_OK(store_->InsertSchedule(&row));
    return row.id;
  }

  // A router whose schedule changes go through builds::ScheduleControl, as farmd's do;
  // `submissions` limits each submitter's submissions per hour.
  Router MakeScheduleRouter(bool with_runner = true, int64_t submissions = quota::kUnlimited) {
    quota::Policy policy;
    policy.by_role["submitter"] = quota::Limits{.submissions = submissions};
    quotas_ = std::make_unique<quota::QuotaKeeper>(store_.get(), &clock_, policy);
    limited_submitter_ =
        std::make_unique<builds::Submitter>(builds::SubmitDeps{.quotas = quotas_.get()});
    limited_control_ = std::make_unique<builds::ScheduleControl>(
        builds::ScheduleControlDeps{.schedules = store_.get(),
                                    .names = store_.get(),
                                    .submitter = limited_submitter_.get(),
                                    .runner = with_runner ? runner_.get() : nullptr,
                                    .sources = {store_.get(), blobs_.get(), &clock_},
                                    .clock = &clock_,
                                    .audit = audit_.get()});
    DashboardDeps deps{store_.get(), blobs_.get(), auth_.get(), &clock_, nullptr, audit_.get()};
    deps.schedule_control = limited_control_.get();
    return Router(DashboardOptions{}, deps);
  }

  Response Post(Router& r, const std::string& target, bool token = true) {
    Request req = MakeRequest("POST", target);
    if (token) req.authorization = bearer_;
    return r.Handle(req);
  }

  Response PostJson(Router& r, const std::string& target, const std::string& body,
                    const std::string& authorization) {
    Request req = MakeRequest("POST", target);
    req.authorization = authorization;
    req.body = body;
    return r.Handle(req);
  }

  NoResolver resolver_;
  std::unique_ptr<StoreSubmitter> submitter_;
  std::unique_ptr<cron::ScheduleRunner> runner_;
  std::unique_ptr<quota::QuotaKeeper> quotas_;
  std::unique_ptr<builds::Submitter> limited_submitter_;
  std::unique_ptr<builds::ScheduleControl> limited_control_;
  std::string bearer_;
};

TEST_F(ScheduleRoutesTest, ListsSchedulesWithNextFireTimeAndNoRunYet) {
  int64_t id = AddSchedule("nightly <b>");
  Router r = MakeScheduleRouter();
  Response res = Get(r, "/api/v1/schedules");
  ASSERT_EQ(res.status, 200) << res.body;
  json::value body = Json(res);
  const json::object& s = body.at("schedules").at(0).as_object();
  EXPECT_EQ(s.at("id").as_int64(), id);
  EXPECT_EQ(s.at("name").as_string(), "nightly <b>");  // escaping is the page's job
  EXPECT_EQ(s.at("cron").as_string(), "0 3 * * *");
  EXPECT_EQ(s.at("time_zone").as_string(), "Europe/Berlin");
  EXPECT_EQ(s.at("missed_run_policy").as_string(), "MISSED_SKIP");
  EXPECT_EQ(s.at("concurrency_policy").as_string(), "CONCURRENCY_SKIP");
  EXPECT_EQ(s.at("next_fire_time").as_string(), "2026-03-28T02:00:00.000Z");
  EXPECT_EQ(s.at("next_fire_unix").as_int64(), kNextBerlin3 / 1000);
  EXPECT_EQ(s.at("next_fire_local").as_string(), "2026-03-28 03:00:00 CET");
  EXPECT_TRUE(s.at("last_run").is_null());
  EXPECT_FALSE(s.contains("request"));
  EXPECT_FALSE(s.contains("runs"));
}

TEST_F(ScheduleRoutesTest, MalformedIdsAre400UnknownAre404WrongMethodsAre405) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter();
  for (const char* bad : {"abc", "0", "-1", "12a", "99999999999999999999"}) {
    Response res = Get(r, std::string("/api/v1/schedules/") + bad);
    EXPECT_EQ(res.status, 400) << bad;
    EXPECT_EQ(Json(res).at("error").at("code").as_string(), "INVALID_ARGUMENT") << bad;
  }
  Response missing = Get(r, "/api/v1/schedules/" + std::to_string(id + 1));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Json(missing).at("error").at("code").as_string(), "NOT_FOUND");
  EXPECT_EQ(Post(r, "/api/v1/schedules/" + std::to_string(id + 1) + "/pause").status, 404);
  EXPECT_EQ(Get(r, "/api/v1/schedules/" + std::to_string(id) + "/nope").status, 404);
  EXPECT_EQ(Get(r, "/api/v1/schedules/" + std::to_string(id) + "/pause").status, 405);
  EXPECT_EQ(Post(r, "/api/v1/schedules/" + std::to_string(id)).status, 405);
  EXPECT_EQ(Post(r, "/api/v1/schedules").status, 400);  // creating needs a JSON body
  EXPECT_EQ(Get(r, "/api/v1/schedulesX").status, 404);
}

TEST_F(ScheduleRoutesTest, ActionsNeedASubmitterToken) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter();
  std::string pause = "/api/v1/schedules/" + std::to_string(id) + "/pause";
  EXPECT_EQ(Post(r, pause, false).status, 401);
  auto viewer = auth_->Create("viewer", "v");
  ASSERT_OK(viewer.status());
  Request req = MakeRequest("POST", pause);
  req.authorization = "Bearer " + viewer.value();
  EXPECT_EQ(r.Handle(req).status, 403);
  auto row = store_->GetSchedule(id);
  ASSERT_OK(row.status());
  EXPECT_FALSE(row->paused);
}

TEST_F(ScheduleRoutesTest, PauseHidesTheFireTimeAndResumePicksOneFromNow) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter();
  std::string base = "/api/v1/schedules/" + std::to_string(id);
  Response paused = Post(r, base + "/pause");
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_TRUE(Json(paused).at("paused").as_bool());
  EXPECT_TRUE(Json(paused).at("next_fire_unix").is_null());
  // Two days later: the fire times passed while paused are skipped, not caught up.
  clock_.Advance(2 * 86'400'000LL);
  Response resumed = Post(r, base + "/resume");
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_FALSE(Json(resumed).at("paused").as_bool());
  EXPECT_EQ(Json(resumed).at("next_fire_time").as_string(), "2026-03-30T01:00:00.000Z");  // CEST
  auto row = store_->GetSchedule(id);
  ASSERT_OK(row.status());
  EXPECT_FALSE(row->paused);
  EXPECT_EQ(row->next_fire_ms / 1000, Json(resumed).at("next_fire_unix").as_int64());
}

TEST_F(ScheduleRoutesTest, RunNowLinksTheBuildAndASkippedRunSaysWhy) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter();
  std::string base = "/api/v1/schedules/" + std::to_string(id);
  Response first = Post(r, base + "/run-now");
  ASSERT_EQ(first.status, 200) << first.body;
  json::value body = Json(first);
  const json::object& run = body.at("run").as_object();
  int64_t build = run.at("build_id").as_int64();
  ASSERT_GT(build, 0);
  EXPECT_EQ(run.at("outcome").as_string(), "RUN_SUBMITTED");
  EXPECT_EQ(run.at("trigger").as_string(), "TRIGGER_MANUAL");
  EXPECT_EQ(run.at("build_state").as_string(), "BUILD_QUEUED");
  EXPECT_EQ(run.at("build_url").as_string(), "#/build/" + std::to_string(build));
  EXPECT_TRUE(run.at("skipped_reason").is_null());

  ASSERT_EQ(Post(r, base + "/run-now").status, 200);  // the first build is still queued
  json::value detail = Json(Get(r, base));
  const json::array& runs = detail.at("runs").as_array();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs.at(0).at("outcome").as_string(), "RUN_SKIPPED_RUNNING");
  EXPECT_TRUE(runs.at(0).at("build_url").is_null());
  EXPECT_EQ(runs.at(0).at("skipped_reason").as_string(),
            "build " + std::to_string(build) + " of a previous run is still going");
  EXPECT_EQ(runs.at(1).at("build_id").as_int64(), build);
  json::value list = Json(Get(r, "/api/v1/schedules"));
  EXPECT_EQ(list.at("schedules").at(0).at("last_run").at("outcome").as_string(),
            "RUN_SKIPPED_RUNNING");
  EXPECT_EQ(Json(Get(r, base + "?runs=1")).at("runs").as_array().size(), 2u);  // at least 2
}

TEST_F(ScheduleRoutesTest, FailedRunsKeepCredentialsOut) {
  int64_t id = AddSchedule("n", true);
  Router r = MakeScheduleRouter();
  Response res = Post(r, "/api/v1/schedules/" + std::to_string(id) + "/run-now");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(Json(res).at("run").at("outcome").as_string(), "RUN_FAILED");
  std::string reason(Json(res).at("run").at("skipped_reason").as_string());
  EXPECT_NE(reason.find("cannot resolve main"), std::string::npos) << reason;
  EXPECT_NE(reason.find("https://[REDACTED]@example.invalid"), std::string::npos) << reason;
  EXPECT_EQ(res.body.find("hunter2"), std::string::npos) << res.body;
  EXPECT_EQ(Get(r, "/api/v1/schedules").body.find("hunter2"), std::string::npos);
}

TEST_F(ScheduleRoutesTest, RunNowWithoutARunnerIs503) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter(false);
  EXPECT_EQ(Post(r, "/api/v1/schedules/" + std::to_string(id) + "/run-now").status, 503);
}

constexpr char kCreateBody[] = R"({"name": "nightly example", "cron": "0 3 * * *",
  "time_zone": "Europe/Berlin", "missed_run_policy": "once", "concurrency_policy": "skip",
  "recipe_yaml": "name: tiny\nsource: {git: {url: 'https://example.invalid/r.git', ref: main}}\nbuild: make\n"})";

// The dashboard takes a submission for creating a schedule and for running one now, as
// farmctl does (docs/limits.md): neither is a way around the quota.
TEST_F(ScheduleRoutesTest, CreatingAndRunningNowTakeSubmissionsFromTheQuota) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter(true, 1);
  std::string run_now = "/api/v1/schedules/" + std::to_string(id) + "/run-now";
  ASSERT_EQ(Post(r, run_now).status, 200);
  Response refused = Post(r, run_now);
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_NE(refused.body.find("retry after"), std::string::npos) << refused.body;
  Response create = PostJson(r, "/api/v1/schedules", kCreateBody, bearer_);
  EXPECT_EQ(create.status, 429) << create.body;
  auto schedules = store_->ListSchedules();
  ASSERT_OK(schedules.status());
  EXPECT_EQ(schedules->size(), 1u);  // nothing was created
  auto runs = store_->ListScheduleRuns(id, 10);
  ASSERT_OK(runs.status());
  EXPECT_EQ(runs->size(), 1u);  // the refused run-now fired nothing
}

TEST_F(ScheduleRoutesTest, CreatesAScheduleFromTheDashboardAsTheTokensOwner) {
  Router r = MakeScheduleRouter();
  Response res = PostJson(r, "/api/v1/schedules", kCreateBody, bearer_);
  ASSERT_EQ(res.status, 201) << res.body;
  json::value body = Json(res);
  EXPECT_EQ(body.at("name").as_string(), "nightly example");
  EXPECT_EQ(body.at("recipe_name").as_string(), "tiny");
  EXPECT_EQ(body.at("missed_run_policy").as_string(), "MISSED_RUN_ONCE");
  EXPECT_EQ(body.at("concurrency_policy").as_string(), "CONCURRENCY_SKIP");
  EXPECT_EQ(body.at("next_fire_time").as_string(), "2026-03-28T02:00:00.000Z");
  EXPECT_EQ(body.at("created_by").as_string(), "s");
  auto row = store_->GetSchedule(body.at("id").as_int64());
  ASSERT_OK(row.status());
  EXPECT_EQ(row->next_fire_ms, kNextBerlin3);
  farm::v1::SubmitBuildRequest stored;
  ASSERT_TRUE(stored.ParseFromString(row->request));
  EXPECT_EQ(stored.source().git().ref(), "main");  // the recipe's branch, resolved per firing
  EXPECT_EQ(Json(Get(r, "/api/v1/schedules")).at("schedules").as_array().size(), 1u);
}

TEST_F(ScheduleRoutesTest, BadSchedulesAreRefusedWithTheReasonAndNothingIsStored) {
  Router r = MakeScheduleRouter();
  auto error_of = [&](const std::string& body) {
    Response res = PostJson(r, "/api/v1/schedules", body, bearer_);
    EXPECT_EQ(res.status, 400) << body << " -> " << res.body;
    return std::string(Json(res).at("error").at("message").as_string());
  };
  std::string recipe =
      R"("recipe_yaml": "name: tiny\nsource: {git: {url: 'https://example.invalid/t.git', ref: main}}\nbuild: make\n")";
  EXPECT_NE(error_of("not json").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of("{" + recipe + "}").find("\"cron\" is required"), std::string::npos);
  EXPECT_NE(error_of(R"({"cron": "0 3 * * *"})").find("\"recipe_yaml\" is required"),
            std::string::npos);
  std::string cron = error_of("{" + recipe + R"(, "cron": "0 25 * * *"})");
  EXPECT_NE(cron.find("field 2"), std::string::npos) << cron;
  std::string yaml = error_of(R"({"cron": "@daily", "recipe_yaml": "name: tiny\nbuidl: x\n"})");
  EXPECT_NE(yaml.find("recipe.yaml"), std::string::npos) << yaml;
  EXPECT_NE(error_of("{" + recipe + R"(, "cron": "@daily", "missed_run_policy": "twice"})")
                .find("\"skip\" or \"once\""),
            std::string::npos);
  EXPECT_NE(error_of("{" + recipe + R"(, "cron": "@daily", "time_zone": "Mars/Olympus"})")
                .find("Mars/Olympus"),
            std::string::npos);
  // A pasted recipe lies on no client that could upload its tree: a path is refused,
  // absolute or not, since no worker reads paths of other machines.
  for (const char* path : {"src", "/src"}) {
    std::string body = R"({"cron": "@daily", "recipe_yaml": "name: tiny\nsource: {local: )" +
                       std::string(path) + R"(}\nbuild: make\n"})";
    EXPECT_NE(error_of(body).find("is a path on the submitting machine"), std::string::npos);
  }
  EXPECT_EQ(PostJson(r, "/api/v1/schedules", kCreateBody, "").status, 401);
  auto viewer = auth_->Create("viewer", "v");
  ASSERT_OK(viewer.status());
  EXPECT_EQ(PostJson(r, "/api/v1/schedules", kCreateBody, "Bearer " + viewer.value()).status, 403);
  EXPECT_TRUE(store_->ListSchedules()->empty());
}

TEST_F(ScheduleRoutesTest, DeleteRemovesTheScheduleAndKeepsItsBuilds) {
  int64_t id = AddSchedule("n");
  Router r = MakeScheduleRouter();
  std::string base = "/api/v1/schedules/" + std::to_string(id);
  Response fired = Post(r, base + "/run-now");
  ASSERT_EQ(fired.status, 200) << fired.body;
  int64_t build = Json(fired).at("run").at("build_id").as_int64();
  EXPECT_EQ(Post(r, base + "/delete", false).status, 401);
  EXPECT_EQ(Get(r, base + "/delete").status, 405);
  Response res = Post(r, base + "/delete");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(Json(res).at("deleted").as_int64(), id);
  EXPECT_EQ(Get(r, base).status, 404);
  EXPECT_EQ(Post(r, base + "/delete").status, 404);
  EXPECT_OK(store_->GetBuild(build).status());
}

}  // namespace
}  // namespace farm::http::testing
