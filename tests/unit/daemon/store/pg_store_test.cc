// What only the PostgreSQL store has: its migration record and the active farmd's lock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "daemon/store/sql/migrations.h"
#include "daemon/store/sql/pg_db.h"
#include "daemon/store/sql_store/postgres.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/postgres_server.h"

namespace farm::store {
namespace {

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(testing::SharedPostgres(), nullptr);
    auto url = testing::SharedPostgres()->CreateDatabase();
    ASSERT_OK(url.status());
    url_ = url.value();
    auto db = OpenPgDb(url_);
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
  }

  int64_t Count(const std::string& sql) {
    auto q = db_->Prepare(sql);
    EXPECT_OK(q.status());
    if (!q.ok()) return -1;
    auto row = (*q)->Step();
    return row.ok() && row.value() ? (*q)->Int(0) : -1;
  }

  // Ends db_'s session from another connection, as an administrator or a restarting
  // server would, and waits (bounded) until the server has let it go.
  void EndSessionOf(Db& db) {
    int64_t pid = 0;
    {
      auto q = db.Prepare("SELECT pg_backend_pid()");
      ASSERT_OK(q.status());
      ASSERT_TRUE((*q)->Step().value());
      pid = (*q)->Int(0);
    }
    auto admin = OpenPgDb(url_);
    ASSERT_OK(admin.status());
    auto kill = (*admin)->Prepare("SELECT pg_terminate_backend(?)");
    ASSERT_OK(kill.status());
    (*kill)->Bind(pid);
    ASSERT_TRUE((*kill)->Step().value());
    for (int i = 0; i < 500; ++i) {
      auto q = (*admin)->Prepare("SELECT count(*) FROM pg_stat_activity WHERE pid = ?");
      ASSERT_OK(q.status());
      (*q)->Bind(pid);
      ASSERT_TRUE((*q)->Step().value());
      if ((*q)->Int(0) == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "the session of pid " << pid << " did not end";
  }

  Status Insert(int64_t k) {
    FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare("INSERT INTO t(k) VALUES (?)"));
    q->Bind(k);
    return q->Run();
  }

  std::string url_;
  std::unique_ptr<Db> db_;
};

TEST_F(PgStoreTest, AStatementAfterALostConnectionConnectsAgain) {
  ASSERT_OK(db_->Exec("CREATE TABLE t(k BIGINT PRIMARY KEY)"));
  ASSERT_OK(Insert(1));
  EndSessionOf(*db_);
  // The statement that finds the connection lost fails; it may or may not have run.
  EXPECT_EQ(Insert(2).code(), StatusCode::kUnavailable);
  EXPECT_FALSE(db_->InTransaction());
  ASSERT_OK(Insert(3));
  EXPECT_EQ(Count("SELECT count(*) FROM t WHERE k IN (1, 3)"), 2);
  // The new session has the same settings: a NOTICE is still not printed, nor an error.
  EXPECT_OK(db_->Exec("CREATE TABLE IF NOT EXISTS t(k BIGINT PRIMARY KEY)"));
}

TEST_F(PgStoreTest, ATransactionWhoseConnectionWasLostCommitsNothing) {
  ASSERT_OK(db_->Exec("CREATE TABLE t(k BIGINT PRIMARY KEY)"));
  {
    Transaction txn(db_.get());
    ASSERT_OK(txn.status());
    ASSERT_OK(Insert(1));
    EndSessionOf(*db_);
    EXPECT_EQ(Insert(2).code(), StatusCode::kUnavailable);
    // Not on a new connection, where each would commit alone.
    EXPECT_EQ(Insert(3).code(), StatusCode::kUnavailable);
    EXPECT_TRUE(db_->InTransaction());
    {
      Transaction nested(db_.get());  // a savepoint of the lost transaction fails too
      EXPECT_FALSE(nested.status().ok());
    }
    EXPECT_EQ(txn.Commit().code(), StatusCode::kUnavailable);
  }
  EXPECT_FALSE(db_->InTransaction());
  ASSERT_OK(Insert(4));
  EXPECT_EQ(Count("SELECT count(*) FROM t"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM t WHERE k = 4"), 1);
  // A transaction that is rolled back instead ends as cleanly.
  {
    Transaction txn(db_.get());
    ASSERT_OK(Insert(5));
    EndSessionOf(*db_);
  }  // rolled back
  EXPECT_FALSE(db_->InTransaction());
  EXPECT_EQ(Count("SELECT count(*) FROM t"), 1);
}

TEST_F(PgStoreTest, TheActiveLocksConnectionIsNeverMadeAgain) {
  auto active = ActiveFarmdLock::Acquire(url_, [] { ADD_FAILURE() << "no other farmd"; });
  ASSERT_OK(active.status());
  EXPECT_EQ(Count("SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
                  "WHERE locktype = 'advisory' AND granted"),
            1);
  Status check = Status::Ok();
  for (int i = 0; i < 200 && check.ok(); ++i) {
    check = active.value()->Check();
    if (check.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(check.code(), StatusCode::kUnavailable) << check.ToString();
  // A new session would hold no lock: the check keeps failing.
  EXPECT_EQ(active.value()->Check().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"), 0);
}

TEST_F(PgStoreTest, MigrationsAreRecordedByNumberAndANewerDatabaseIsRefused) {
  ASSERT_OK(OpenPostgresStore(url_).status());
  ASSERT_OK(OpenPostgresStore(url_).status());  // nothing applied twice
  const auto& files = PostgresMigrations();
  ASSERT_EQ(files.size(), Migrations().size());
  auto q = db_->Prepare("SELECT number, file_name FROM schema_migrations ORDER BY number");
  ASSERT_OK(q.status());
  for (size_t i = 0; i < files.size(); ++i) {
    ASSERT_TRUE((*q)->Step().value());
    EXPECT_EQ((*q)->Int(0), static_cast<int64_t>(i + 1));
    EXPECT_EQ((*q)->Text(1), files[i].file_name);
    EXPECT_EQ(files[i].file_name, Migrations()[i].file_name);
  }
  EXPECT_FALSE((*q)->Step().value());
  ASSERT_OK(
      db_->Exec("INSERT INTO schema_migrations(number, file_name, source) "
                "VALUES (999, '999_from_the_future.sql', 'applied')"));
  Status refused = OpenPostgresStore(url_).status();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("999_from_the_future.sql"), std::string::npos);
}

TEST_F(PgStoreTest, ASecondFarmdWaitsAsStandbyUntilTheActiveOnesSessionEnds) {
  auto active = ActiveFarmdLock::Acquire(url_, [] { ADD_FAILURE() << "first is no standby"; });
  ASSERT_OK(active.status());
  std::atomic<bool> standby{false}, took_over{false};
  Status second_status;
  std::unique_ptr<ActiveFarmdLock> second;
  std::thread t([&] {
    auto lock = ActiveFarmdLock::Acquire(url_, [&] { standby = true; });
    second_status = lock.status();
    if (lock.ok()) second = std::move(lock).value();
    took_over = true;
  });
  for (int i = 0; i < 300 && !standby; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(standby);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(took_over) << "two farmds active at once";
  EXPECT_OK(active.value()->Check());
  active.value().reset();  // the active farmd's session ends
  for (int i = 0; i < 1000 && !took_over; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  t.join();
  ASSERT_OK(second_status);
  EXPECT_OK(second->Check());
  // The server ends the new active farmd's session: its check says so.
  EXPECT_EQ(Count("SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
                  "WHERE locktype = 'advisory' AND granted"),
            1);
  // pg_terminate_backend signals the session and returns; it ends a moment later.
  Status check = Status::Ok();
  for (int i = 0; i < 200 && check.ok(); ++i) {
    check = second->Check();
    if (check.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(check.code(), StatusCode::kUnavailable) << check.ToString();
}

}  // namespace
}  // namespace farm::store
