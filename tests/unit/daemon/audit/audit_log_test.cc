// The audit log over a real SQLite store: every action has its own name, outcomes follow
// the status, records are written with who, role, target and detail, and nothing that
// looks like a token or a credential survives into a record.
#include "daemon/audit/audit_log.h"

#include <set>
#include <thread>

#include "common/log.h"
#include "daemon/store/store.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::audit {
namespace {

class AuditLogTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override { log_ = std::make_unique<AuditLog>(store_.get(), &clock_); }

  std::vector<store::AuditRow> Rows() {
    log_->Flush();
    auto rows = store_->ListAudit({});
    EXPECT_OK(rows.status());
    return rows.ok() ? *rows : std::vector<store::AuditRow>{};
  }

  std::unique_ptr<AuditLog> log_;
  const auth::Principal mallory_{"mallory", "submitter", ""};
};

TEST_F(AuditLogTest, EveryActionHasItsOwnNameAndOutcomesFollowTheStatus) {
  std::set<std::string_view> names;
  for (int a = 0; a <= static_cast<int>(Action::kKeyRevoke); ++a) {
    std::string_view name = ActionName(static_cast<Action>(a));
    EXPECT_NE(name, "unknown") << a;
    EXPECT_NE(name.find('.'), std::string_view::npos) << name;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_EQ(OutcomeName(OutcomeOf(Status::Ok())), "ok");
  EXPECT_EQ(OutcomeName(OutcomeOf(Status::PermissionDenied("no"))), "denied");
  EXPECT_EQ(OutcomeName(OutcomeOf(Status::NotFound("no"))), "failed");
}

TEST_F(AuditLogTest, AuditedRecordsWhatWasDoneOrWhyItWasRefused) {
  Entry cancel{Action::kBuildCancel, "build 12"};
  Status refused = Audited(log_.get(), mallory_, cancel,
                           [] { return Status::PermissionDenied("build 12 belongs to alice"); });
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  clock_.Advance(1000);
  Entry submit{Action::kBuildSubmit, "recipe file r.yaml"};
  auto id = Audited(log_.get(), mallory_, submit, [&]() -> Result<int64_t> {
    submit.target = "recipe mine";
    submit.done = "build 13";
    return 13;
  });
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, 13);
  Entry none{Action::kJobRetry, "job 1"};
  EXPECT_OK(Audited(nullptr, mallory_, none, [] { return Status::Ok(); }));  // no log: no record

  auto rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].action, "build.submit");
  EXPECT_EQ(rows[0].target, "recipe mine");
  EXPECT_EQ(rows[0].outcome, "ok");
  EXPECT_EQ(rows[0].detail, "build 13");
  EXPECT_EQ(rows[0].time_ms, clock_.NowUnixMs());
  EXPECT_EQ(rows[1].principal, "mallory");
  EXPECT_EQ(rows[1].role, "submitter");
  EXPECT_EQ(rows[1].action, "build.cancel");
  EXPECT_EQ(rows[1].target, "build 12");
  EXPECT_EQ(rows[1].outcome, "denied");
  EXPECT_EQ(rows[1].detail, "build 12 belongs to alice");
}

TEST_F(AuditLogTest, NoTokenOrCredentialReachesARecord) {
  log::RegisterSecret("registered-secret-value");
  std::string hostile =
      "token farm_sub_0123456789abcdef0123456789abcdef0123456789abcdef leaked\n"
      "Bearer abcdefghijklmnop, https://user:hunter2@example.invalid/r.git, "
      "registered-secret-value";
  log_->Record(mallory_, {Action::kBuildSubmit, "https://u:pw123456@host/x"},
               Status::InvalidArgument(hostile));
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 1u);
  for (const std::string& text : {rows[0].detail, rows[0].target}) {
    for (const char* secret : {"0123456789abcdef", "abcdefghijklmnop", "hunter2", "pw123456",
                               "registered-secret-value", "\n"}) {
      EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << text;
    }
  }
  EXPECT_NE(rows[0].detail.find("example.invalid"), std::string::npos) << rows[0].detail;
  EXPECT_EQ(SafeText(std::string(2000, 'x')).size(), 500u);
}

TEST_F(AuditLogTest, EveryRecordIsWrittenByTheWriterAndTheLastOnesWhenItStops) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 250; ++i) {
        log_->Record(mallory_, {Action::kJobRetry, "job " + std::to_string(t * 1000 + i)},
                     Status::Ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  log_->Flush();
  auto rows = store_->ListAudit({.limit = 5000});
  ASSERT_OK(rows.status());
  std::set<std::string> targets;
  for (const auto& r : *rows) targets.insert(r.target);
  EXPECT_EQ(targets.size(), 1000u);  // each once

  for (int i = 0; i < 5; ++i) log_->Record(mallory_, {Action::kBuildCancel, "late"}, Status::Ok());
  log_.reset();  // stopping writes what is queued
  rows = store_->ListAudit({.limit = 5000});
  ASSERT_OK(rows.status());
  EXPECT_EQ(rows->size(), 1005u);
  EXPECT_EQ(rows->front().target, "late");
}

}  // namespace
}  // namespace farm::audit
