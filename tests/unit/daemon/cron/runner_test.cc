// ScheduleRunner over a real SQLite store under a fake clock: fire times, the missed-run
// policies across a simulated farmd restart, the concurrency policy, unchanged inputs
// and run-now. The git resolver and the build submitter are fakes (the real ones are
// exercised by tests/integration/test_schedules.py).
#include "daemon/cron/runner.h"

#include <gtest/gtest.h>

#include <ctime>
#include <map>

#include "tests/support/test_util.h"
#include "tests/unit/daemon/cron/runner_fixture.h"

namespace farm::cron {
namespace {

int64_t UtcMs(const std::string& iso) {
  std::tm tm{};
  EXPECT_NE(strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << iso;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

class FakeResolver final : public SourceResolver {
 public:
  Result<std::string> ResolveGitRef(const std::string& url, const std::string& ref) override {
    ++calls;
    auto it = commits.find(ref);
    if (it == commits.end()) return Status::Unavailable("cannot reach " + url);
    return it->second;
  }
  std::map<std::string, std::string> commits;
  int calls = 0;
};

class RunnerTest : public RunnerFixture {
 protected:
  void SetUp() override {
    clock_.Set(UtcMs("2026-03-27T12:00:00Z"));
    Reopen();
  }

  std::unique_ptr<ScheduleRunner> MakeRunner() override {
    return std::make_unique<ScheduleRunner>(store_.get(), &clock_, &resolver_, &submitter_);
  }

  int64_t AddSchedule(const std::string& cron, const std::string& zone, int missed = 1,
                      int concurrency = 1, bool git = true) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml("name: demo\n");
    if (git) {
      req.mutable_source()->mutable_git()->set_url("https://example.invalid/demo.git");
      req.mutable_source()->mutable_git()->set_ref("main");
    } else {
      req.mutable_source()->set_local_path("/src/demo");
      req.set_source_digest("abc");
    }
    auto next = NextFireMs(cron, zone, clock_.NowUnixMs());
    EXPECT_OK(next.status());
    store::ScheduleRow row{.name = "demo",
                           .recipe_name = "demo",
                           .request = req.SerializeAsString(),
                           .cron = cron,
                           .time_zone = zone,
                           .missed_policy = missed,
                           .concurrency_policy = concurrency,
                           .next_fire_ms = next.ok() ? next.value() : 0,
                           .created_by = "test",
                           .created_ms = clock_.NowUnixMs()};
    EXPECT_OK(store_->InsertSchedule(&row));
    return row.id;
  }

  // Completes every job of the build as a worker would.
  void FinishBuild(int64_t build_id, bool ok) {
    for (int i = 0; i < 10; ++i) {
      auto job = store_->AcquireJob("w1", clock_.NowUnixMs(), 60000, nullptr);
      ASSERT_OK(job.status());
      if (!job.value()) break;
      ASSERT_EQ(job.value()->build_id, build_id);
      store::CompletionReport r{.job_id = job.value()->id,
                                .attempt = job.value()->attempt,
                                .worker_id = "w1",
                                .cause = ok ? 1 : 2,
                                .exit_code = ok ? 0 : 1};
      ASSERT_OK(store_->CompleteAttempt(r, clock_.NowUnixMs()).status());
    }
    auto build = store_->GetBuild(build_id);
    ASSERT_OK(build.status());
    ASSERT_EQ(build->state, ok ? store::kBuildSucceeded : store::kBuildFailed);
  }

  int Tick() {
    auto fired = runner_->Tick();
    EXPECT_OK(fired.status());
    return fired.ok() ? fired.value() : -1;
  }

  FakeResolver resolver_;
};

TEST_F(RunnerTest, FiresAtItsCronTimesAcrossTheSpringChange) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("0 3 * * *", "Europe/Berlin", 1, 2);
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-28T02:00:00Z"));  // 03:00 CET
  clock_.Set(UtcMs("2026-03-28T01:59:59Z"));
  EXPECT_EQ(Tick(), 0);
  clock_.Set(UtcMs("2026-03-28T02:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  EXPECT_EQ(Tick(), 0);  // fired once
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(runs[0].trigger, farm::v1::TRIGGER_CRON);
  EXPECT_EQ(runs[0].fire_ms, UtcMs("2026-03-28T02:00:00Z"));
  EXPECT_EQ(runs[0].resolved_commit, std::string(40, 'a'));
  ASSERT_EQ(submitter_.requests.size(), 1u);
  EXPECT_EQ(submitter_.requests[0].source().git().commit(), std::string(40, 'a'));
  // The next night is the change: 03:00 CEST is 01:00Z.
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-29T01:00:00Z"));
  FinishBuild(runs[0].build_id, true);
  resolver_.commits["main"] = std::string(40, 'b');
  clock_.Set(UtcMs("2026-03-29T01:00:30Z"));
  EXPECT_EQ(Tick(), 1);
  runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(runs[0].resolved_commit, std::string(40, 'b'));
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-30T01:00:00Z"));
  EXPECT_EQ(store_->ScheduleOfBuild(runs[0].build_id).value(), id);
}

TEST_F(RunnerTest, UnchangedInputsSkipUntilTheBranchMoves) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("@hourly", "UTC");
  clock_.Set(UtcMs("2026-03-27T13:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  int64_t first_build = Runs(id)[0].build_id;
  FinishBuild(first_build, true);
  clock_.Set(UtcMs("2026-03-27T14:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SKIPPED_UNCHANGED);
  EXPECT_EQ(runs[0].build_id, 0);
  EXPECT_EQ(runs[0].detail, "inputs unchanged since run " + std::to_string(runs[1].id) +
                                " (build " + std::to_string(first_build) +
                                ", commit aaaaaaaaaaaa)");
  EXPECT_EQ(submitter_.requests.size(), 1u);
  // run-now honours the same check; --force builds anyway and keeps the next fire time.
  auto now_run = runner_->RunNow(id, false);
  ASSERT_OK(now_run.status());
  EXPECT_EQ(now_run->outcome, farm::v1::RUN_SKIPPED_UNCHANGED);
  auto forced = runner_->RunNow(id, true);
  ASSERT_OK(forced.status());
  EXPECT_EQ(forced->outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(forced->trigger, farm::v1::TRIGGER_MANUAL);
  EXPECT_TRUE(submitter_.requests.back().force());
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-27T15:00:00Z"));
  FinishBuild(forced->build_id, true);
  // A new commit builds.
  resolver_.commits["main"] = std::string(40, 'c');
  clock_.Set(UtcMs("2026-03-27T15:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(Runs(id)[0].resolved_commit, std::string(40, 'c'));
}

TEST_F(RunnerTest, AFailedBuildIsNotABaseForSkipping) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("@hourly", "UTC");
  clock_.Set(UtcMs("2026-03-27T13:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  FinishBuild(Runs(id)[0].build_id, false);
  clock_.Set(UtcMs("2026-03-27T14:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(submitter_.requests.size(), 2u);
}

TEST_F(RunnerTest, SkipsWhileThePreviousRunIsGoing) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("*/10 * * * *", "UTC");
  clock_.Set(UtcMs("2026-03-27T12:10:00Z"));
  EXPECT_EQ(Tick(), 1);
  resolver_.commits["main"] = std::string(40, 'b');
  clock_.Set(UtcMs("2026-03-27T12:20:00Z"));
  EXPECT_EQ(Tick(), 1);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SKIPPED_RUNNING);
  EXPECT_EQ(runs[0].detail,
            "build " + std::to_string(runs[1].build_id) + " of a previous run is still going");
  EXPECT_EQ(submitter_.requests.size(), 1u);
}

TEST_F(RunnerTest, MissedRunsWithPolicySkipAreRecordedNotBuilt) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("@hourly", "UTC", farm::v1::MISSED_SKIP);
  // farmd is down from 12:30 to 17:20: 13:00..17:00 are missed (5 fire times).
  runner_.reset();
  clock_.Set(UtcMs("2026-03-27T17:20:00Z"));
  Reopen();
  EXPECT_EQ(Tick(), 1);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SKIPPED_MISSED);
  EXPECT_EQ(runs[0].detail,
            "5 fire time(s) missed while farmd was down (2026-03-27T13:00:00.000Z to "
            "2026-03-27T17:00:00.000Z), policy skip");
  EXPECT_TRUE(submitter_.requests.empty());
  EXPECT_EQ(resolver_.calls, 0);
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-27T18:00:00Z"));
  EXPECT_EQ(Tick(), 0);
}

TEST_F(RunnerTest, MissedRunsWithPolicyRunOnceBuildOnce) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("0 3 * * *", "America/New_York", farm::v1::MISSED_RUN_ONCE);
  runner_.reset();
  clock_.Set(UtcMs("2026-03-30T12:00:00Z"));  // down for three nights
  Reopen();
  EXPECT_EQ(Tick(), 1);
  EXPECT_EQ(Tick(), 0);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(runs[0].trigger, farm::v1::TRIGGER_CATCH_UP);
  EXPECT_EQ(runs[0].fire_ms, UtcMs("2026-03-30T07:00:00Z"));  // the latest missed, 03:00 EDT
  EXPECT_NE(runs[0].detail.find("3 fire time(s) missed"), std::string::npos) << runs[0].detail;
  EXPECT_EQ(submitter_.requests.size(), 1u);
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-31T07:00:00Z"));
}

TEST_F(RunnerTest, ALateTickWithinTheGraceIsAnOrdinaryRun) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("@hourly", "UTC", farm::v1::MISSED_SKIP);
  clock_.Set(UtcMs("2026-03-27T13:00:45Z"));
  EXPECT_EQ(Tick(), 1);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(Runs(id)[0].trigger, farm::v1::TRIGGER_CRON);
}

TEST_F(RunnerTest, SchedulesSurviveARestartAndPauseHolds) {
  resolver_.commits["main"] = std::string(40, 'a');
  int64_t id = AddSchedule("@hourly", "UTC");
  ASSERT_OK(store_->SetSchedulePaused(id, true, 0));
  Reopen();
  auto s = store_->GetSchedule(id);
  ASSERT_OK(s.status());
  EXPECT_TRUE(s->paused);
  EXPECT_EQ(s->cron, "@hourly");
  clock_.Set(UtcMs("2026-03-27T15:00:00Z"));
  EXPECT_EQ(Tick(), 0);
  ASSERT_OK(store_->DeleteSchedule(id, clock_.NowUnixMs()));
  EXPECT_EQ(store_->GetSchedule(id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->ListSchedules()->empty());
}

TEST_F(RunnerTest, AnUnresolvableBranchIsRecordedAndTheScheduleMovesOn) {
  int64_t id = AddSchedule("@hourly", "UTC");
  clock_.Set(UtcMs("2026-03-27T13:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_FAILED);
  EXPECT_EQ(runs[0].detail, "cannot resolve main: cannot reach https://example.invalid/demo.git");
  EXPECT_EQ(store_->GetSchedule(id)->next_fire_ms, UtcMs("2026-03-27T14:00:00Z"));
}

TEST_F(RunnerTest, ALocalSourceAlwaysBuilds) {
  int64_t id = AddSchedule("@hourly", "UTC", 1, 1, /*git=*/false);
  clock_.Set(UtcMs("2026-03-27T13:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  FinishBuild(Runs(id)[0].build_id, true);
  clock_.Set(UtcMs("2026-03-27T14:00:00Z"));
  EXPECT_EQ(Tick(), 1);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SUBMITTED);
  ASSERT_EQ(submitter_.requests.size(), 2u);
  EXPECT_TRUE(submitter_.requests[1].source_digest().empty());
}

}  // namespace
}  // namespace farm::cron
