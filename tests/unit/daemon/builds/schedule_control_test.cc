// Creating, updating, pausing, resuming, deleting and running schedules against in-memory
// ports: who may, what is recorded (once per request, refusals included), and what changes.
// Running one through the real runner is tested with the REST routes
// (tests/unit/daemon/http/rest/schedules_test.cc), which also take the quota.
#include "daemon/builds/schedule_control.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_schedules.h"
#include "tests/unit/daemon/builds/in_memory_store.h"
#include "tests/unit/daemon/builds/recording_audit.h"

namespace farm::builds {
namespace {

// 2026-03-27T12:00:00Z; "0 3 * * *" in UTC fires next at 2026-03-28T03:00:00Z.
constexpr int64_t kNow = 1'774'612'800'000;
constexpr int64_t kHour = 3'600'000;

farm::v1::CreateScheduleRequest Nightly(const std::string& recipe_name) {
  farm::v1::CreateScheduleRequest req;
  req.set_name("nightly " + recipe_name);
  req.set_cron("0 3 * * *");
  req.mutable_build()->set_recipe_yaml(
      "name: " + recipe_name +
      "\nsource: {git: {url: 'https://example.invalid/r.git', ref: main}}\nbuild: make\n");
  req.mutable_build()->set_recipe_path("recipe.yaml");
  return req;
}

class ScheduleControlTest : public ::testing::Test {
 protected:
  ScheduleControlTest()
      : control_(ScheduleControlDeps{.schedules = &schedules_,
                                     .names = &store_,
                                     .submitter = &submitter_,
                                     .sources = {.sources = &store_, .clock = &clock_},
                                     .clock = &clock_,
                                     .audit = &audit_}) {
    clock_.Set(kNow);
  }

  const Principal alice_{"alice", "submitter", ""};
  const Principal bob_{"bob", "submitter", ""};
  const Principal admin_{"root", "admin", ""};
  const Principal viewer_{"vera", "viewer", ""};
  testing::InMemoryStore store_;
  testing::InMemorySchedules schedules_;
  farm::testing::FakeClock clock_;
  testing::RecordingAudit audit_;
  Submitter submitter_{SubmitDeps{}};  // no quotas
  ScheduleControl control_;
};

TEST_F(ScheduleControlTest, TheCreatorOwnsTheScheduleAndItsRecipeName) {
  auto made = control_.Create(alice_, Nightly("tiny"));
  ASSERT_OK(made.status());
  EXPECT_EQ(made->created_by, "alice");
  EXPECT_EQ(made->next_fire_ms, kNow + 15 * kHour);
  EXPECT_EQ(store_.names.at("tiny").owner, "alice");
  // Another submitter may not schedule a recipe under alice's name; a viewer nothing.
  EXPECT_EQ(control_.Create(bob_, Nightly("tiny")).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(control_.Create(viewer_, Nightly("other")).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(schedules_.rows.size(), 1u);
  EXPECT_FALSE(store_.names.contains("other"));
  ASSERT_EQ(audit_.records.size(), 3u);
  EXPECT_EQ(audit_.records[0].action, audit::Action::kScheduleCreate);
  EXPECT_EQ(audit_.records[0].target, "recipe tiny");
  EXPECT_EQ(audit_.records[0].done, "schedule " + std::to_string(made->id));
  EXPECT_EQ(audit_.records[1].principal, "bob");
  EXPECT_EQ(audit_.records[1].outcome, StatusCode::kPermissionDenied);
  EXPECT_EQ(audit_.records[2].principal, "vera");
}

TEST_F(ScheduleControlTest, AMalformedScheduleIsRefusedAndRecorded) {
  farm::v1::CreateScheduleRequest bad = Nightly("tiny");
  bad.set_cron("61 * * * *");
  EXPECT_EQ(control_.Create(alice_, bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(schedules_.rows.empty());
  EXPECT_FALSE(store_.names.contains("tiny"));  // nothing claimed
  ASSERT_EQ(audit_.records.size(), 1u);
  EXPECT_EQ(audit_.records[0].outcome, StatusCode::kInvalidArgument);
}

TEST_F(ScheduleControlTest, OnlyTheOwnerOrAnAdminPausesAndAResumeFiresFromNow) {
  auto made = control_.Create(alice_, Nightly("tiny"));
  ASSERT_OK(made.status());
  const int64_t id = made->id;
  EXPECT_EQ(control_.SetPaused(bob_, id, true).status().code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(schedules_.rows.at(id).paused);
  auto paused = control_.SetPaused(alice_, id, true);
  ASSERT_OK(paused.status());
  EXPECT_TRUE(paused->paused);
  // Two days later: the fire times passed while paused are not caught up.
  clock_.Advance(48 * kHour);
  auto resumed = control_.SetPaused(admin_, id, false);
  ASSERT_OK(resumed.status());
  EXPECT_FALSE(resumed->paused);
  EXPECT_EQ(resumed->next_fire_ms, kNow + (48 + 15) * kHour);
  EXPECT_EQ(control_.SetPaused(alice_, id + 1, true).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(audit_.records.size(), 5u);
  EXPECT_EQ(audit_.records[1].action, audit::Action::kSchedulePause);
  EXPECT_EQ(audit_.records[1].outcome, StatusCode::kPermissionDenied);
  EXPECT_EQ(audit_.records[3].action, audit::Action::kScheduleResume);
  EXPECT_EQ(audit_.records[3].principal, "root");
}

TEST_F(ScheduleControlTest, UpdateKeepsTheNameAndDeleteLeavesNothingToChange) {
  auto made = control_.Create(alice_, Nightly("tiny"));
  ASSERT_OK(made.status());
  const int64_t id = made->id;
  farm::v1::SubmitBuildRequest renamed = Nightly("another").build();
  EXPECT_EQ(control_.Update(alice_, id, renamed).status().code(), StatusCode::kInvalidArgument);
  farm::v1::SubmitBuildRequest changed = Nightly("tiny").build();
  changed.set_recipe_yaml(changed.recipe_yaml() + "env: {CHANGED: '1'}\n");
  EXPECT_EQ(control_.Update(bob_, id, changed).status().code(), StatusCode::kPermissionDenied);
  auto updated = control_.Update(alice_, id, changed);
  ASSERT_OK(updated.status());
  EXPECT_NE(updated->request, made->request);
  EXPECT_EQ(updated->next_fire_ms, made->next_fire_ms);
  EXPECT_EQ(control_.Delete(bob_, id).code(), StatusCode::kPermissionDenied);
  ASSERT_OK(control_.Delete(alice_, id));
  EXPECT_EQ(control_.Delete(alice_, id).code(), StatusCode::kNotFound);
  EXPECT_EQ(control_.SetPaused(admin_, id, true).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(audit_.records.back().action, audit::Action::kSchedulePause);
  EXPECT_EQ(audit_.records.size(), 8u);
}

TEST_F(ScheduleControlTest, RunNowWithoutARunnerIsUnavailableAndRecorded) {
  auto made = control_.Create(alice_, Nightly("tiny"));
  ASSERT_OK(made.status());
  EXPECT_EQ(control_.RunNow(alice_, made->id, false).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(control_.RunNow(viewer_, made->id, false).status().code(),
            StatusCode::kPermissionDenied);
  ASSERT_EQ(audit_.records.size(), 3u);
  EXPECT_EQ(audit_.records[1].action, audit::Action::kScheduleRun);
  EXPECT_EQ(audit_.records[1].outcome, StatusCode::kUnavailable);
}

}  // namespace
}  // namespace farm::builds
