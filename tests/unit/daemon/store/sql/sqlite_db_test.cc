// The SQLite connection: reused prepared statements and the commit tickets that the store's
// group commit waits on.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "daemon/store/sql/db.h"
#include "daemon/store/sql/rows.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

using ::farm::testing::ScopedTempDir;

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Db::Open(dir_.path() + "/t.db");
    ASSERT_OK(db.status());
    db_ = std::move(*db);
    ASSERT_OK(db_->Exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  }

  std::string ValueOf(int64_t k) {
    auto s = db_->Prepare("SELECT v FROM t WHERE k = ?");
    EXPECT_OK(s.status());
    (*s)->Bind(k);
    auto row = (*s)->Step();
    EXPECT_OK(row.status());
    return row.ok() && *row ? (*s)->Text(0) : "<none>";
  }

  uintmax_t WalBytes() {
    std::error_code ec;
    auto size = std::filesystem::file_size(dir_.path() + "/t.db-wal", ec);
    EXPECT_FALSE(ec) << ec.message();
    return ec ? 0 : size;
  }

  ScopedTempDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(SqliteDbTest, AReusedStatementStartsWithFreshBindingsAndNoOpenRead) {
  for (int64_t k = 1; k <= 3; ++k) {
    auto s = db_->Prepare("INSERT INTO t(k, v) VALUES (?, ?)");
    ASSERT_OK(s.status());
    ASSERT_OK((*s)->Bind(k).Bind("v" + std::to_string(k)).Run());
  }
  EXPECT_EQ(ValueOf(2), "v2");
  EXPECT_EQ(ValueOf(3), "v3");
  EXPECT_EQ(ValueOf(7), "<none>");
  {
    // A statement dropped mid-read is reset when it goes back: a write transaction can
    // start and commit after it.
    auto s = db_->Prepare("SELECT k FROM t ORDER BY k");
    ASSERT_OK(s.status());
    ASSERT_TRUE(*(*s)->Step());
  }
  Transaction txn(db_.get());
  ASSERT_OK(txn.status());
  ASSERT_OK(db_->Exec("DELETE FROM t WHERE k = 1"));
  ASSERT_OK(txn.Commit());
  EXPECT_EQ(ValueOf(1), "<none>");
}

TEST_F(SqliteDbTest, TwoLiveStatementsWithOneTextAreIndependent) {
  ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (1, 'a'), (2, 'b')"));
  auto outer = db_->Prepare("SELECT v FROM t WHERE k = ?");
  auto inner = db_->Prepare("SELECT v FROM t WHERE k = ?");
  ASSERT_OK(outer.status());
  ASSERT_OK(inner.status());
  (*outer)->Bind(int64_t{1});
  (*inner)->Bind(int64_t{2});
  ASSERT_TRUE(*(*outer)->Step());
  ASSERT_TRUE(*(*inner)->Step());
  EXPECT_EQ((*outer)->Text(0), "a");
  EXPECT_EQ((*inner)->Text(0), "b");
}

TEST_F(SqliteDbTest, ManyDistinctStatementsPastTheCacheStillRun) {
  ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (7, 'seven')"));
  for (int i = 0; i < 1200; ++i) {
    EXPECT_EQ(ValueOf(7), "seven");  // a statement used all along, kept or prepared again
    auto s = db_->Prepare("SELECT " + std::to_string(i) + " + ?");
    ASSERT_OK(s.status());
    (*s)->Bind(int64_t{1});
    ASSERT_TRUE(*(*s)->Step());
    ASSERT_EQ((*s)->Int(0), i + 1);
  }
  EXPECT_EQ(ValueOf(1), "<none>");
  // A text with a trailing blank is a statement of its own in the cache, and still runs.
  auto padded = db_->Prepare("SELECT v FROM t WHERE k = 7 ");
  ASSERT_OK(padded.status());
  ASSERT_TRUE(*(*padded)->Step());
  EXPECT_EQ((*padded)->Text(0), "seven");
}

TEST_F(SqliteDbTest, ACommitTakesATicketAndAReadOrARollbackDoesNot) {
  int64_t start = db_->CommitTicket();
  ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (1, 'a')"));  // autocommit
  EXPECT_EQ(db_->CommitTicket(), start + 1);
  EXPECT_EQ(ValueOf(1), "a");
  EXPECT_EQ(db_->CommitTicket(), start + 1);
  {
    Transaction txn(db_.get());
    ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (2, 'b')"));
    ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (3, 'c')"));
    ASSERT_OK(txn.Commit());
  }
  EXPECT_EQ(db_->CommitTicket(), start + 2);
  {
    Transaction txn(db_.get());
    ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (4, 'd')"));
  }  // rolled back
  EXPECT_EQ(db_->CommitTicket(), start + 2);
  EXPECT_EQ(ValueOf(4), "<none>");
  {
    Transaction txn(db_.get());  // a write transaction that changes nothing
    ASSERT_OK(db_->Exec("UPDATE t SET v = 'x' WHERE k = 99"));
    ASSERT_OK(txn.Commit());
  }
  EXPECT_EQ(db_->CommitTicket(), start + 2);
  db_->WaitDurable(db_->CommitTicket());  // flushes the log; a failure would end the test
  auto reopened = Db::Open(dir_.path() + "/t.db");
  ASSERT_OK(reopened.status());
  auto s = (*reopened)->Prepare("SELECT COUNT(*) FROM t");
  ASSERT_OK(s.status());
  ASSERT_TRUE(*(*s)->Step());
  EXPECT_EQ((*s)->Int(0), 3);
}

TEST_F(SqliteDbTest, TheLogIsCheckpointedSoItStaysBounded) {
  // 32 MiB in 2,000 commits; without checkpoints the log would hold all of it. The store
  // checkpoints between its calls, as here, with the last statement still open as the
  // store's queries leave theirs until they return.
  std::string blob(16 * 1024, 'b');
  for (int64_t k = 1; k <= 2000; ++k) {
    auto read = db_->Prepare("SELECT COUNT(*) FROM t");
    ASSERT_OK(read.status());
    ASSERT_TRUE(*(*read)->Step());  // open until the end of this iteration
    auto s = db_->Prepare("INSERT OR REPLACE INTO t(k, v) VALUES (?, ?)");
    ASSERT_OK(s.status());
    ASSERT_OK((*s)->Bind(k % 50).Bind(blob).Run());
    read->reset();
    s->reset();
    db_->Checkpoint();
  }
  db_->WaitDurable(db_->CommitTicket());
  EXPECT_LT(WalBytes(), 16u << 20);
}

TEST_F(SqliteDbTest, ALogGrownByOneLargeTransactionShrinksAfterwards) {
  {
    Transaction txn(db_.get());
    ASSERT_OK(txn.status());
    std::string blob(1 << 20, 'b');
    for (int64_t k = 1; k <= 40; ++k) {
      auto s = db_->Prepare("INSERT INTO t(k, v) VALUES (?, ?)");
      ASSERT_OK(s.status());
      ASSERT_OK((*s)->Bind(k).Bind(blob).Run());
    }
    ASSERT_OK(txn.Commit());
  }
  EXPECT_GT(WalBytes(), 40u << 20);
  db_->Checkpoint();
  ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (100, 'small')"));  // starts the log over
  db_->Checkpoint();
  EXPECT_LE(WalBytes(), 16u << 20);
}

TEST_F(SqliteDbTest, ATransactionInsideAnotherIsASavepoint) {
  {
    Transaction outer(db_.get());
    ASSERT_OK(outer.status());
    ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (1, 'outer')"));
    {
      Transaction kept(db_.get());
      ASSERT_OK(kept.status());
      ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (2, 'kept')"));
      ASSERT_OK(kept.Commit());
    }
    {
      Transaction undone(db_.get());  // destroyed without Commit: undoes its own only
      ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (3, 'undone')"));
    }
    EXPECT_TRUE(db_->InTransaction());
    ASSERT_OK(outer.Commit());
  }
  EXPECT_FALSE(db_->InTransaction());
  EXPECT_EQ(ValueOf(1), "outer");
  EXPECT_EQ(ValueOf(2), "kept");
  EXPECT_EQ(ValueOf(3), "<none>");
  {
    Transaction outer(db_.get());
    Transaction inner(db_.get());
    ASSERT_OK(db_->Exec("INSERT INTO t(k, v) VALUES (4, 'inner')"));
    ASSERT_OK(inner.Commit());
  }  // the outer one rolls back, the committed savepoint with it
  EXPECT_EQ(ValueOf(4), "<none>");
  EXPECT_FALSE(db_->InTransaction());
}

TEST_F(SqliteDbTest, AFailedStatementThroughExecSaysWhy) {
  Status st = db_->Exec("INSERT INTO missing VALUES (1)");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("missing"), std::string::npos) << st.message();
  st = db_->Exec("INSERT INTO t(k, v) VALUES (1, 'a'); INSERT INTO t(k, v) VALUES (1, 'b')");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(ValueOf(1), "a");
}

enum class Color { kRed = 1, kBlue = 2 };
struct ReadBack {
  int64_t id = 0;
  std::string name;
  int count = 0;
  bool flag = false;
  Color color = Color::kRed;
};

TEST_F(SqliteDbTest, ReadMembersFillsEachMemberFromItsColumnInOrder) {
  auto s = db_->Prepare("SELECT 7, 'seven', 3, 2, 2");
  ASSERT_OK(s.status());
  auto row = (*s)->Step();
  ASSERT_OK(row.status());
  ASSERT_TRUE(*row);
  auto r = ReadMembers<ReadBack>(**s, &ReadBack::id, &ReadBack::name, &ReadBack::count,
                                 &ReadBack::flag, &ReadBack::color);
  EXPECT_EQ(r.id, 7);
  EXPECT_EQ(r.name, "seven");
  EXPECT_EQ(r.count, 3);
  EXPECT_TRUE(r.flag);
  EXPECT_EQ(r.color, Color::kBlue);
}

}  // namespace
}  // namespace farm::store
