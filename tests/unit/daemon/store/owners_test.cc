// Recipe names and their owners, and the audit log (migration 019), and project names
// (027), on SQLite and, in store_pg_test, on PostgreSQL: claims race to one owner,
// transfers keep the first claim's time, the audit log pages newest first, a database
// from before 019 adopts its names from each name's first build (a scheduled one by its
// schedule's creator), and one from before 027 its projects from each one's first wheel.
#include <gtest/gtest.h>

#include <map>

#include "daemon/store/sql/migration_runner.h"
#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class OwnersTest : public StoreTest {};

TEST_F(OwnersTest, TheFirstClaimOwnsANameAndLaterClaimsSeeThatOwner) {
  auto none = store_->GetRecipeName("attn-example");
  ASSERT_OK(none.status());
  EXPECT_FALSE(none->has_value());

  auto first = store_->ClaimRecipeName("attn-example", "alice", 100);
  ASSERT_OK(first.status());
  EXPECT_EQ(first->owner, "alice");
  EXPECT_EQ(first->claimed_ms, 100);
  auto second = store_->ClaimRecipeName("attn-example", "mallory", 200);
  ASSERT_OK(second.status());
  EXPECT_EQ(second->owner, "alice");  // unchanged: the claim lost
  EXPECT_EQ(second->claimed_ms, 100);
  ASSERT_OK(store_->ClaimRecipeName("flash-attn", "bob", 300).status());

  auto got = store_->GetRecipeName("attn-example");
  ASSERT_OK(got.status());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->owner, "alice");
  auto all = store_->ListRecipeNames();
  ASSERT_OK(all.status());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).name, "attn-example");  // by name
  EXPECT_EQ(all->at(1).name, "flash-attn");
  EXPECT_EQ(all->at(1).owner, "bob");
}

TEST_F(OwnersTest, TransferChangesTheOwnerAndAssignsANameNobodyOwned) {
  ASSERT_OK(store_->ClaimRecipeName("attn-example", "alice", 100).status());
  auto moved = store_->TransferRecipeName("attn-example", "bob", 500);
  ASSERT_OK(moved.status());
  EXPECT_EQ(moved->owner, "bob");
  EXPECT_EQ(moved->claimed_ms, 100);
  EXPECT_EQ(moved->updated_ms, 500);
  auto claim = store_->ClaimRecipeName("attn-example", "alice", 600);
  ASSERT_OK(claim.status());
  EXPECT_EQ(claim->owner, "bob");  // alice no longer owns it and cannot take it back

  auto fresh = store_->TransferRecipeName("triton", "carol", 700);
  ASSERT_OK(fresh.status());
  EXPECT_EQ(fresh->owner, "carol");
  EXPECT_EQ(fresh->claimed_ms, 700);
}

TEST_F(OwnersTest, ProjectNamesAreOwnedApartFromRecipeNames) {
  ASSERT_OK(store_->ClaimRecipeName("alib", "bob", 50).status());  // another namespace
  auto first = store_->ClaimProjectName("alib", "alice", 100);
  ASSERT_OK(first.status());
  EXPECT_EQ(first->owner, "alice");
  EXPECT_EQ(store_->ClaimProjectName("alib", "mallory", 200)->owner, "alice");
  auto moved = store_->TransferProjectName("alib", "carol", 300);
  ASSERT_OK(moved.status());
  EXPECT_EQ(moved->owner, "carol");
  EXPECT_EQ(moved->claimed_ms, 100);
  EXPECT_EQ(moved->updated_ms, 300);
  ASSERT_OK(store_->ClaimProjectName("flash-attn", "dave", 400).status());
  auto all = store_->ListProjectNames();
  ASSERT_OK(all.status());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).name, "alib");
  EXPECT_EQ(all->at(1).owner, "dave");
  EXPECT_FALSE(store_->GetProjectName("nobody-owns")->has_value());
  EXPECT_EQ((*store_->GetRecipeName("alib"))->owner, "bob");
}

TEST_F(OwnersTest, AuditRowsListNewestFirstPerPrincipalAndPage) {
  for (int i = 0; i < 5; ++i) {
    AuditRow row{.time_ms = 1000 + i,
                 .principal = i % 2 == 0 ? "alice" : "mallory",
                 .role = "submitter",
                 .action = "build.cancel",
                 .target = "build " + std::to_string(i),
                 .outcome = i % 2 == 0 ? "ok" : "denied",
                 .detail = i % 2 == 0 ? "" : "build belongs to alice"};
    ASSERT_OK(store_->InsertAudit(&row));
    EXPECT_GT(row.id, 0);
  }
  auto all = store_->ListAudit({});
  ASSERT_OK(all.status());
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ(all->at(0).target, "build 4");  // newest first
  EXPECT_EQ(all->at(4).target, "build 0");
  EXPECT_EQ(all->at(3).outcome, "denied");
  EXPECT_EQ(all->at(3).detail, "build belongs to alice");
  EXPECT_EQ(all->at(3).role, "submitter");
  EXPECT_EQ(all->at(3).time_ms, 1001);

  auto mallory = store_->ListAudit({.principal = "mallory"});
  ASSERT_OK(mallory.status());
  ASSERT_EQ(mallory->size(), 2u);
  for (const auto& r : *mallory) EXPECT_EQ(r.principal, "mallory");

  auto page = store_->ListAudit({.limit = 2});
  ASSERT_OK(page.status());
  ASSERT_EQ(page->size(), 2u);
  auto next = store_->ListAudit({.before_id = page->back().id, .limit = 2});
  ASSERT_OK(next.status());
  ASSERT_EQ(next->size(), 2u);
  EXPECT_EQ(next->at(0).target, "build 2");
  EXPECT_TRUE(store_->ListAudit({.principal = "nobody"})->empty());
}

// A database made before migration 019, with a build of each name, a later build of the
// same name by someone else, and a build a schedule fired (submitted as "schedule N").
class OwnersMigrationTest : public ::testing::Test {
 protected:
  testing::ScopedTempDir dir_;
  StoreUnderTest under_test_{dir_.path()};
};

Status Exec(Db& db, const std::string& sql, const std::vector<std::string>& args) {
  FARM_ASSIGN_OR_RETURN(auto s, db.Prepare(sql));
  for (const auto& a : args) s->Bind(a);
  return s->Run();
}

TEST_F(OwnersMigrationTest, NamesAreAdoptedByTheirFirstBuildsSubmitter) {
  {
    auto db = under_test_.OpenDb();
    ASSERT_OK(db.status());
    std::vector<MigrationFile> before;
    for (const auto& f : StoreUnderTest::MigrationFiles()) {
      if (f.file_name < "019") before.push_back(f);
    }
    ASSERT_EQ(before.size(), 18u);
    ASSERT_OK(MigrateSchema(**db, before));
    const std::string build =
        "INSERT INTO builds(id, recipe_name, recipe, state, submitted_by, created_ms) "
        "VALUES (?, ?, ?, 3, ?, ?)";
    auto add = [&](int64_t id, const std::string& name, const std::string& who) -> Status {
      FARM_ASSIGN_OR_RETURN(auto s, (*db)->Prepare(build));
      s->Bind(id).Bind(name).BindBlob("r").Bind(who).Bind(id * 100);
      return s->Run();
    };
    ASSERT_OK(add(1, "attn-example", "alice"));
    ASSERT_OK(add(2, "attn-example", "mallory"));
    ASSERT_OK(add(3, "nightly-flash", "schedule 7"));
    ASSERT_OK(add(4, "flash-attn", "bob"));
    ASSERT_OK(Exec(**db,
                   "INSERT INTO schedules(id, name, recipe_name, request, cron, time_zone, "
                   "missed_policy, concurrency_policy, next_fire_ms, created_by, created_ms) "
                   "VALUES (7, 'n', 'nightly-flash', '', '@daily', 'UTC', 1, 1, 0, ?, 50)",
                   {"carol"}));
    ASSERT_OK(Exec(**db,
                   "INSERT INTO schedules(id, name, recipe_name, request, cron, time_zone, "
                   "missed_policy, concurrency_policy, next_fire_ms, created_by, created_ms) "
                   "VALUES (8, 'm', 'never-built', '', '@daily', 'UTC', 1, 1, 0, ?, 60)",
                   {"dave"}));
    ASSERT_OK(Exec(**db,
                   "INSERT INTO schedule_runs(schedule_id, trigger, outcome, fire_ms, "
                   "created_ms, build_id) VALUES (7, 1, 1, 300, 300, 3)",
                   {}));
  }
  auto store = under_test_.Open();  // applies 019
  ASSERT_OK(store.status());
  auto names = (*store)->ListRecipeNames();
  ASSERT_OK(names.status());
  std::map<std::string, std::string> owners;
  for (const auto& n : *names) owners[n.name] = n.owner;
  EXPECT_EQ(owners, (std::map<std::string, std::string>{{"attn-example", "alice"},
                                                        {"flash-attn", "bob"},
                                                        {"nightly-flash", "carol"},
                                                        {"never-built", "dave"}}));
  auto scheduled = (*store)->GetBuild(3);
  ASSERT_OK(scheduled.status());
  EXPECT_EQ(scheduled->submitted_by, "carol");  // the schedule's creator owns its build
  EXPECT_EQ((*store)->GetBuild(2)->submitted_by, "mallory");
}

// A database made before migration 027 holding wheels: each project is adopted by the
// submitter of the build of its first wheel, under its PEP 503 name.
TEST_F(OwnersMigrationTest, ProjectsAreAdoptedByTheirFirstWheelsSubmitter) {
  {
    auto db = under_test_.OpenDb();
    ASSERT_OK(db.status());
    std::vector<MigrationFile> before;
    for (const auto& f : StoreUnderTest::MigrationFiles()) {
      if (f.file_name < "027") before.push_back(f);
    }
    ASSERT_OK(MigrateSchema(**db, before));
    auto add = [&](int64_t id, const std::string& who, const std::string& wheel) -> Status {
      FARM_RETURN_IF_ERROR(Exec(**db,
                                "INSERT INTO builds(id, recipe_name, recipe, state, "
                                "submitted_by, created_ms) VALUES (" +
                                    std::to_string(id) + ", 'r" + std::to_string(id) +
                                    "', 'r', 3, ?, 1)",
                                {who}));
      FARM_RETURN_IF_ERROR(Exec(**db,
                                "INSERT INTO jobs(id, build_id, cell, state, created_ms) VALUES (" +
                                    std::to_string(id) + ", " + std::to_string(id) + ", 'c', 3, 1)",
                                {}));
      return Exec(**db,
                  "INSERT INTO artifacts(job_id, attempt, filename, sha256, size, created_ms) "
                  "VALUES (" +
                      std::to_string(id) + ", 1, ?, 'x', 1, " + std::to_string(id * 10) + ")",
                  {wheel});
    };
    ASSERT_OK(add(1, "alice", "Attn__Example-1.0-cp311-cp311-linux_x86_64.whl"));
    ASSERT_OK(add(2, "mallory", "attn_example-9.0-cp311-cp311-linux_x86_64.whl"));
    ASSERT_OK(add(3, "bob", "flash.attn-2.0-cp311-cp311-linux_x86_64.whl"));
  }
  auto store = under_test_.Open();  // applies 027
  ASSERT_OK(store.status());
  auto names = (*store)->ListProjectNames();
  ASSERT_OK(names.status());
  std::map<std::string, std::string> owners;
  for (const auto& n : *names) owners[n.name] = n.owner;
  EXPECT_EQ(owners,
            (std::map<std::string, std::string>{{"attn-example", "alice"}, {"flash-attn", "bob"}}));
  EXPECT_EQ((*(*store)->GetProjectName("attn-example"))->claimed_ms, 10);
}

}  // namespace
}  // namespace farm::store
