// The dashboard's write routes decide who may change what: a submitter that does not own a
// build, job or schedule is refused (403, the owner named) and nothing changes; the owner
// and an admin may; a viewer may not; each attempt leaves an audit record, refusals
// included, readable by admins only at /api/v1/audit; builds and schedules show their owner.
#include <gtest/gtest.h>

#include "farm/v1/client.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

class MutationsTest : public HttpFixture {
 protected:
  void SetUp() override {
    HttpFixture::SetUp();
    for (auto [role, name] : {std::pair{"submitter", "test"},
                              {"submitter", "mallory"},
                              {"admin", "root"},
                              {"viewer", "reader"}}) {
      auto token = auth_->Create(role, name);
      ASSERT_OK(token.status());
      bearer_[name] = "Bearer " + token.value();
    }
  }

  Response Post(Router& r, const std::string& target, const std::string& who,
                const std::string& body = "") {
    Request req = MakeRequest("POST", target);
    req.authorization = who.empty() ? "" : bearer_.at(who);
    req.body = body;
    return r.Handle(req);
  }

  std::vector<store::AuditRow> Audit(const std::string& principal = "") {
    audit_->Flush();
    auto rows = store_->ListAudit({.principal = principal});
    EXPECT_OK(rows.status());
    return rows.ok() ? *rows : std::vector<store::AuditRow>{};
  }

  std::map<std::string, std::string> bearer_;
};

TEST_F(MutationsTest, OnlyTheOwnerOrAnAdminCancelsAndRetriesAndEveryTryIsRecorded) {
  int64_t build = 0;
  auto jobs = AddBuild(2, "13.0", "2.8", &build);  // owned by "test"
  Router r = MakeRouter();
  std::string cancel = "/api/v1/builds/" + std::to_string(build) + "/cancel";

  Response refused = Post(r, cancel, "mallory");
  ASSERT_EQ(refused.status, 403) << refused.body;
  EXPECT_NE(refused.body.find("belongs to test"), std::string::npos) << refused.body;
  EXPECT_EQ(store_->GetBuild(build)->state, store::kBuildQueued);  // nothing changed
  EXPECT_EQ(Post(r, cancel, "reader").status, 403);
  EXPECT_EQ(Post(r, cancel, "").status, 401);

  Response cancelled = Post(r, cancel, "test");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(store_->GetBuild(build)->state, store::kBuildCancelled);

  std::string retry = "/api/v1/jobs/" + std::to_string(jobs[0]) + "/retry";
  EXPECT_EQ(Post(r, retry, "mallory").status, 403);
  EXPECT_EQ(store_->GetJob(jobs[0])->state, store::kJobCancelled);
  Response retried = Post(r, retry, "root");  // an admin may
  ASSERT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(store_->GetJob(jobs[0])->state, store::kJobPending);

  auto mallory = Audit("mallory");
  ASSERT_EQ(mallory.size(), 2u);
  EXPECT_EQ(mallory[0].action, "job.retry");
  EXPECT_EQ(mallory[0].outcome, "denied");
  EXPECT_EQ(mallory[1].action, "build.cancel");
  EXPECT_EQ(mallory[1].target, "build " + std::to_string(build));
  EXPECT_NE(mallory[1].detail.find("belongs to test"), std::string::npos);
  auto reader = Audit("reader");
  ASSERT_EQ(reader.size(), 1u);
  EXPECT_EQ(reader[0].role, "viewer");
  EXPECT_EQ(reader[0].outcome, "denied");
  EXPECT_EQ(Audit("test").at(0).outcome, "ok");
  EXPECT_EQ(Audit("root").at(0).action, "job.retry");
  EXPECT_EQ(Audit().size(), 5u);  // the call without a token has no principal: no record
}

TEST_F(MutationsTest, SchedulesChangeOnlyForTheirCreatorOrAnAdmin) {
  farm::v1::SubmitBuildRequest req;
  store::ScheduleRow row{.name = "n",
                         .recipe_name = "attn-example",
                         .request = req.SerializeAsString(),
                         .cron = "@daily",
                         .time_zone = "UTC",
                         .next_fire_ms = clock_.NowUnixMs() + 86'400'000,
                         .created_by = "test",
                         .created_ms = clock_.NowUnixMs()};
  ASSERT_OK(store_->InsertSchedule(&row));
  Router r = MakeRouter();
  std::string base = "/api/v1/schedules/" + std::to_string(row.id);
  for (const char* action : {"/pause", "/resume", "/delete", "/run-now"}) {
    Response res = Post(r, base + action, "mallory");
    EXPECT_EQ(res.status, 403) << action << ": " << res.body;
  }
  auto unchanged = store_->GetSchedule(row.id);
  ASSERT_OK(unchanged.status());
  EXPECT_FALSE(unchanged->paused);
  EXPECT_EQ(Audit("mallory").size(), 4u);
  ASSERT_EQ(Post(r, base + "/pause", "test").status, 200);
  EXPECT_TRUE(store_->GetSchedule(row.id)->paused);
  ASSERT_EQ(Post(r, base + "/delete", "root").status, 200);
  EXPECT_EQ(store_->GetSchedule(row.id).status().code(), StatusCode::kNotFound);
}

TEST_F(MutationsTest, ASchedulesRecipeNameIsClaimedAndASquatIsRefused) {
  constexpr char kBody[] = R"({"cron": "@daily", "recipe_yaml":
    "name: tiny\nsource: {git: {url: 'https://example.invalid/r.git', ref: main}}\nbuild: make\n"})";
  Router r = MakeRouter();
  Response created = Post(r, "/api/v1/schedules", "test", kBody);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(Json(created).at("owner").as_string(), "test");
  EXPECT_EQ((*store_->GetRecipeName("tiny"))->owner, "test");
  Response squat = Post(r, "/api/v1/schedules", "mallory", kBody);
  ASSERT_EQ(squat.status, 403) << squat.body;
  EXPECT_NE(squat.body.find("\\\"tiny\\\" belongs to test"), std::string::npos) << squat.body;
  EXPECT_EQ(store_->ListSchedules()->size(), 1u);
  auto denied = Audit("mallory");
  ASSERT_EQ(denied.size(), 1u);
  EXPECT_EQ(denied[0].action, "schedule.create");
  EXPECT_EQ(denied[0].target, "recipe tiny");
}

TEST_F(MutationsTest, DrainNeedsAnAdminAndTheRefusalIsRecorded) {
  ASSERT_OK(store_->UpsertWorker({"w1", "worker-1", "", store::WorkerState::kIdle, 1, 1}));
  Router r = MakeRouter();
  EXPECT_EQ(Post(r, "/api/v1/workers/w1/drain", "test").status, 403);
  EXPECT_FALSE(store_->GetWorker("w1")->drain_requested);
  auto rows = Audit("test");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].action, "worker.drain");
  EXPECT_EQ(rows[0].outcome, "denied");
  ASSERT_EQ(Post(r, "/api/v1/workers/w1/drain", "root").status, 200);
  EXPECT_TRUE(store_->GetWorker("w1")->drain_requested);
}

TEST_F(MutationsTest, TheAuditLogIsForAdminsEvenWhereReadsArePublic) {
  int64_t build = 0;
  AddBuild(1, "13.0", "2.8", &build);
  Router r = MakeRouter();  // public_read
  ASSERT_EQ(Post(r, "/api/v1/builds/" + std::to_string(build) + "/cancel", "mallory").status, 403);
  EXPECT_EQ(Get(r, "/api/v1/audit").status, 401);
  Request req = MakeRequest("GET", "/api/v1/audit?principal=mallory&limit=5");
  req.authorization = bearer_.at("test");
  EXPECT_EQ(r.Handle(req).status, 403);
  req.authorization = bearer_.at("root");
  Response res = r.Handle(req);
  ASSERT_EQ(res.status, 200) << res.body;
  json::value body = Json(res);
  const json::array& records = body.at("records").as_array();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].at("principal").as_string(), "mallory");
  EXPECT_EQ(records[0].at("outcome").as_string(), "denied");
  for (const auto& [name, bearer] : bearer_) {
    EXPECT_EQ(res.body.find(bearer.substr(7)), std::string::npos) << name << "'s token";
  }
}

TEST_F(MutationsTest, BuildsAndSchedulesShowTheirOwner) {
  AddBuild(1);
  Router r = MakeRouter();
  json::value builds = Json(Get(r, "/api/v1/builds"));
  EXPECT_EQ(builds.at("builds").at(0).at("owner").as_string(), "test");
}

}  // namespace
}  // namespace farm::http::testing
