#include "daemon/store/sql/migration_runner.h"

#include <gmock/gmock.h>

#include <set>

#include "daemon/store/sql/db.h"
#include "daemon/store/sql/migrations.h"
#include "daemon/store/store.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

using ::testing::HasSubstr;

struct AppliedRow {
  int64_t number;
  std::string file_name;
  std::string source;
  bool operator==(const AppliedRow&) const = default;
  friend void PrintTo(const AppliedRow& r, std::ostream* os) {
    *os << r.number << " " << r.file_name << " (" << r.source << ")";
  }
};

class StoreMigrationTest : public ::testing::Test {
 protected:
  std::unique_ptr<Db> OpenDb() {
    auto db = Db::Open(path_);
    EXPECT_OK(db.status());
    return db.ok() ? std::move(*db) : nullptr;
  }

  // What the runner before numbering did: the first n files by position, each setting
  // PRAGMA user_version to its position.
  static void MigrateTheOldWay(Db& db, const std::vector<MigrationFile>& files, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      Transaction txn(&db);
      ASSERT_OK(txn.status());
      ASSERT_OK(db.Exec(files[i].sql));
      ASSERT_OK(db.Exec("PRAGMA user_version=" + std::to_string(i + 1)));
      ASSERT_OK(txn.Commit());
    }
  }

  static int64_t Int(Db& db, const std::string& sql) {
    auto q = db.Prepare(sql);
    EXPECT_OK(q.status());
    if (!q.ok()) return -1;
    auto row = (*q)->Step();
    EXPECT_TRUE(row.ok() && *row) << sql;
    return (*q)->Int(0);
  }

  static bool HasTable(Db& db, const std::string& name) {
    return Int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" + name +
                       "'") == 1;
  }

  static std::vector<AppliedRow> Applied(Db& db) {
    std::vector<AppliedRow> out;
    auto q = db.Prepare("SELECT number, file_name, source FROM schema_migrations ORDER BY number");
    EXPECT_OK(q.status());
    if (!q.ok()) return out;
    for (int i = 0; i < 1000; ++i) {
      auto row = (*q)->Step();
      if (!row.ok() || !*row) break;
      out.push_back({(*q)->Int(0), (*q)->Text(1), (*q)->Text(2)});
    }
    return out;
  }

  // Tables, indexes and columns, to compare an upgraded database with a fresh one.
  static std::set<std::string> Schema(Db& db) {
    std::set<std::string> out;
    auto q = db.Prepare(
        "SELECT m.type || ' ' || m.name || ' ' || coalesce(p.name, '') FROM sqlite_master m "
        "LEFT JOIN pragma_table_info(m.name) p WHERE m.name NOT LIKE 'sqlite_%'");
    EXPECT_OK(q.status());
    if (!q.ok()) return out;
    for (int i = 0; i < 10000; ++i) {
      auto row = (*q)->Step();
      if (!row.ok() || !*row) break;
      out.insert((*q)->Text(0));
    }
    return out;
  }

  static std::vector<AppliedRow> AllApplied(size_t adopted) {
    std::vector<AppliedRow> out;
    const auto& files = Migrations();
    for (size_t i = 0; i < files.size(); ++i) {
      out.push_back({static_cast<int64_t>(i + 1), files[i].file_name,
                     i < adopted ? "user_version" : "applied"});
    }
    return out;
  }

  testing::ScopedTempDir dir_;
  std::string path_ = dir_.path() + "/farm.db";
};

const std::vector<MigrationFile> kTwo = {
    {"001_a.sql", "CREATE TABLE a (x INTEGER);"},
    {"002_b.sql", "ALTER TABLE a ADD COLUMN y INTEGER;"},
};

TEST_F(StoreMigrationTest, CompiledFilesAreNumberedWithoutGapOrDuplicate) {
  auto plan = PlanMigrations(Migrations());
  ASSERT_OK(plan.status());
  ASSERT_GE(plan->size(), 8u);
  EXPECT_EQ((*plan)[6].file_name, "007_compile_cache.sql");
  EXPECT_EQ((*plan)[7].file_name, "008_scheduler_indexes.sql");
}

TEST_F(StoreMigrationTest, FreshDatabaseRecordsEveryMigrationByNumberAndName) {
  auto db = OpenDb();
  ASSERT_OK(MigrateSchema(*db, Migrations()));
  EXPECT_EQ(Applied(*db), AllApplied(0));
  EXPECT_EQ(Int(*db, "PRAGMA user_version"), static_cast<int64_t>(Migrations().size()));
  EXPECT_EQ(Int(*db,
                "SELECT count(*) FROM pragma_table_info('attempts') "
                "WHERE name = 'cache_hits'"),
            1);
}

TEST_F(StoreMigrationTest, AppliesInNumericOrderWhateverTheListOrder) {
  auto db = OpenDb();
  // 002 alters the table 001 creates: applied by position it would fail.
  ASSERT_OK(MigrateSchema(*db, {kTwo[1], kTwo[0]}));
  EXPECT_EQ(Applied(*db),
            (std::vector<AppliedRow>{{1, "001_a.sql", "applied"}, {2, "002_b.sql", "applied"}}));
}

TEST_F(StoreMigrationTest, ReopenAppliesNothingTwiceAndOnlyNewFilesLater) {
  {
    auto db = OpenDb();
    ASSERT_OK(MigrateSchema(*db, kTwo));
  }
  auto db = OpenDb();
  ASSERT_OK(db->Exec("INSERT INTO a(x, y) VALUES (1, 2)"));
  // 002 is an ALTER TABLE ADD COLUMN: applying it again would fail.
  ASSERT_OK(MigrateSchema(*db, kTwo));
  ASSERT_OK(MigrateSchema(*db, kTwo));
  auto three = kTwo;
  three.push_back({"003_c.sql", "CREATE TABLE c (z INTEGER);"});
  ASSERT_OK(MigrateSchema(*db, three));
  EXPECT_EQ(Applied(*db).size(), 3u);
  EXPECT_EQ(Int(*db, "SELECT count(*) FROM a WHERE x = 1 AND y = 2"), 1);
  EXPECT_EQ(Int(*db, "PRAGMA user_version"), 3);
}

TEST_F(StoreMigrationTest, CompiledSetReopensIdempotently) {
  for (int i = 0; i < 3; ++i) {
    auto db = OpenDb();
    SCOPED_TRACE("open " + std::to_string(i));
    ASSERT_OK(MigrateSchema(*db, Migrations()));
    EXPECT_EQ(Applied(*db), AllApplied(0));
  }
}

TEST_F(StoreMigrationTest, UpgradesEveryDatabaseThePositionalRunnerMade) {
  std::set<std::string> fresh;
  {
    auto db = Db::Open(dir_.path() + "/fresh.db");
    ASSERT_OK(db.status());
    ASSERT_OK(MigrateSchema(**db, Migrations()));
    fresh = Schema(**db);
  }
  const auto& files = Migrations();
  for (size_t n = 0; n <= files.size(); ++n) {
    SCOPED_TRACE("made with the first " + std::to_string(n) + " migrations");
    std::string path = dir_.path() + "/legacy" + std::to_string(n) + ".db";
    {
      auto db = Db::Open(path);
      ASSERT_OK(db.status());
      MigrateTheOldWay(**db, files, n);
      if (n >= 1) {
        ASSERT_OK(
            (*db)->Exec("INSERT INTO tokens(hash, name, role, created_ms) "
                        "VALUES ('h1', 'admin', 'admin', 5)"));
      }
    }
    auto db = Db::Open(path);
    ASSERT_OK(db.status());
    ASSERT_OK(MigrateSchema(**db, files));
    EXPECT_EQ(Applied(**db), AllApplied(n));
    EXPECT_EQ(Schema(**db), fresh);
    EXPECT_EQ(Int(**db, "SELECT count(*) FROM tokens WHERE hash = 'h1'"), n >= 1 ? 1 : 0);
    ASSERT_OK(MigrateSchema(**db, files));  // and again: nothing to do
    EXPECT_EQ(Applied(**db), AllApplied(n));
  }
}

TEST_F(StoreMigrationTest, StoreOpensADataDirectoryThePositionalRunnerMade) {
  {
    auto db = OpenDb();
    MigrateTheOldWay(*db, Migrations(), 5);
    ASSERT_OK(
        db->Exec("INSERT INTO tokens(hash, name, role, created_ms) "
                 "VALUES ('h1', 'admin', 'admin', 5)"));
  }
  auto store = OpenSqliteStore(path_);
  ASSERT_OK(store.status());
  store->reset();
  auto db = OpenDb();
  EXPECT_EQ(Applied(*db), AllApplied(5));
  EXPECT_EQ(Int(*db, "SELECT count(*) FROM tokens"), 1);
}

// A store made while 008_scheduler_indexes.sql was numbered 007: user_version 7 meant
// "scheduler indexes", so the positional runner skipped 007_compile_cache.sql.
TEST_F(StoreMigrationTest, PositionalDatabaseFromARenumberedFileIsRefusedNotSkipped) {
  std::vector<MigrationFile> then(Migrations().begin(), Migrations().begin() + 6);
  then.push_back({"007_scheduler_indexes.sql", Migrations()[7].sql});
  {
    auto db = OpenDb();
    MigrateTheOldWay(*db, then, 7);
  }
  Status s = OpenSqliteStore(path_).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("column attempts.cache_hits"));
  EXPECT_THAT(s.message(), HasSubstr("index jobs_by_state_priority"));
  EXPECT_THAT(s.message(), HasSubstr("007_compile_cache.sql"));
  auto db = OpenDb();
  EXPECT_FALSE(HasTable(*db, "schema_migrations"));  // nothing recorded
  EXPECT_EQ(Int(*db, "PRAGMA user_version"), 7);
}

TEST_F(StoreMigrationTest, DuplicateNumberIsRefusedNamingBothFiles) {
  auto db = OpenDb();
  auto files = kTwo;
  files.push_back({"002_other.sql", "CREATE TABLE other (x INTEGER);"});
  Status s = MigrateSchema(*db, files);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("002_b.sql"));
  EXPECT_THAT(s.message(), HasSubstr("002_other.sql"));
  EXPECT_THAT(s.message(), HasSubstr("same number"));
  EXPECT_FALSE(HasTable(*db, "a"));
  EXPECT_FALSE(HasTable(*db, "schema_migrations"));
}

TEST_F(StoreMigrationTest, GapAndBadNamesAreRefused) {
  auto db = OpenDb();
  Status gap = MigrateSchema(*db, {kTwo[0], {"003_c.sql", "CREATE TABLE c (x INTEGER);"}});
  EXPECT_EQ(gap.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(gap.message(), HasSubstr("no migration numbered 2 (after 001_a.sql)"));
  Status no_first = MigrateSchema(*db, {kTwo[1]});
  EXPECT_THAT(no_first.message(), HasSubstr("no migration numbered 1"));
  for (std::string bad : {"a_b.sql", "001.sql", "001_b.txt", "001b.sql", "001_.sql"}) {
    Status s = MigrateSchema(*db, {{bad, "SELECT 1;"}});
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << bad;
    EXPECT_THAT(s.message(), HasSubstr("not named NNN_name.sql")) << bad;
  }
  EXPECT_FALSE(HasTable(*db, "schema_migrations"));
}

TEST_F(StoreMigrationTest, NumberAppliedUnderAnotherNameIsRefusedNamingBoth) {
  {
    auto db = OpenDb();
    ASSERT_OK(MigrateSchema(*db, kTwo));
  }
  auto db = OpenDb();
  std::vector<MigrationFile> renamed = {kTwo[0], {"002_c.sql", "CREATE TABLE c (x INTEGER);"}};
  Status s = MigrateSchema(*db, renamed);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("migration 2 was applied to the database as 002_b.sql"));
  EXPECT_THAT(s.message(), HasSubstr("002_c.sql"));
  EXPECT_FALSE(HasTable(*db, "c"));
}

TEST_F(StoreMigrationTest, DatabaseFromANewerFarmdIsRefused) {
  {
    auto db = OpenDb();
    ASSERT_OK(MigrateSchema(*db, kTwo));
  }
  auto db = OpenDb();
  Status s = MigrateSchema(*db, {kTwo[0]});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("002_b.sql applied, which this farmd does not have"));
  // And a positional database newer than the files.
  auto legacy = Db::Open(dir_.path() + "/legacy.db");
  ASSERT_OK(legacy.status());
  MigrateTheOldWay(**legacy, kTwo, 2);
  Status old = MigrateSchema(**legacy, {kTwo[0]});
  EXPECT_EQ(old.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(old.message(), HasSubstr("newer than this farmd supports"));
}

TEST_F(StoreMigrationTest, FailedMigrationRollsBackAndRunsAgainOnceFixed) {
  auto db = OpenDb();
  std::vector<MigrationFile> files = {
      kTwo[0], {"002_b.sql", "CREATE TABLE half (x INTEGER); CREATE TABLE broken (;"}};
  Status s = MigrateSchema(*db, files);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("002_b.sql"));
  EXPECT_FALSE(HasTable(*db, "half"));  // the part before the error was rolled back
  EXPECT_EQ(Applied(*db).size(), 1u);
  EXPECT_EQ(Int(*db, "PRAGMA user_version"), 1);
  files[1].sql = "CREATE TABLE half (x INTEGER);";
  ASSERT_OK(MigrateSchema(*db, files));
  EXPECT_TRUE(HasTable(*db, "half"));
  EXPECT_EQ(Applied(*db).size(), 2u);
}

}  // namespace
}  // namespace farm::store
