// How logs are stored: what a log costs on disk (SQLite pages, PostgreSQL's table with its
// TOAST and index), and lines stored one per row by older farmds still read back.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class LogStorageTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    auto db = under_test_.OpenDb();
    ASSERT_OK(db.status());
    db_ = std::move(db).value();
    BuildRow b{.recipe_name = "loud", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<JobRow> jobs(1);
    jobs[0].cell = "cell";
    ASSERT_OK(store_->CreateBuild(&b, &jobs));
    auto job = store_->AcquireJob("w1", 10, 100000, nullptr);
    ASSERT_OK(job.status());
    ASSERT_TRUE(job->has_value());
    job_id_ = (*job)->id;
  }

  int64_t Query(const std::string& sql) {
    auto q = db_->Prepare(sql);
    EXPECT_OK(q.status());
    if (!q.ok()) return -1;
    auto row = (*q)->Step();
    return row.ok() && row.value() ? (*q)->Int(0) : -1;
  }

  // Bytes the database holds for logs: SQLite's whole file (every page in use, the log
  // tables' and their indexes'), PostgreSQL's log tables with their TOAST and indexes.
  int64_t LogBytesOnDisk() {
    if (db_->dialect() == Dialect::kSqlite) {
      return Query("PRAGMA page_count") * Query("PRAGMA page_size");
    }
    return Query(
        "SELECT pg_total_relation_size('log_chunks') + "
        "pg_total_relation_size('log_lines')");
  }

  std::unique_ptr<Db> db_;
  int64_t job_id_ = 0;
};

TEST_F(LogStorageTest, SixtyFourMebibytesOfNoiseCostAtMostEightyOnDisk) {
  // Bytes no compressor shrinks, in lines of 1000, as the worker sends them (200 a batch):
  // one row per line took up to nine times this.
  constexpr int64_t kLimit = 64LL << 20;
  const int64_t before = LogBytesOnDisk();
  std::mt19937_64 rng(11);
  int64_t seq = 0;
  int64_t acked = 0;
  while (acked == seq && seq < kLimit / 1000 + 400) {
    std::vector<LogLineRow> batch;
    for (int i = 0; i < 200; ++i) {
      std::string text(999, '\0');
      for (char& c : text) c = static_cast<char>(rng());
      batch.push_back({++seq, 1, std::move(text), seq});
    }
    auto r = store_->AppendLogLines(job_id_, 1, batch, kLimit);
    ASSERT_OK(r.status());
    acked = r.value();
  }
  ASSERT_EQ(acked, seq);
  const int64_t grown = LogBytesOnDisk() - before;
  std::cout << "64 MiB of log text took " << grown / 1024 << " KiB on disk\n";
  EXPECT_LE(grown, 80LL << 20) << grown;
  EXPECT_GE(grown, 60LL << 20) << grown;  // the text is there, not lost
  // Reading still goes line by line: the last lines kept, the cut, and nothing after it.
  auto cut = store_->GetLogLines(job_id_, 1, kLimit / 1000 - 3, 100);
  ASSERT_OK(cut.status());
  ASSERT_EQ(cut->size(), 4u);
  EXPECT_EQ(cut->at(0).seq, kLimit / 1000 - 2);
  EXPECT_EQ(cut->at(2).text.size(), 999u);
  EXPECT_NE(cut->at(3).text.find("log truncated"), std::string::npos) << cut->at(3).text;
  EXPECT_EQ(cut->at(3).stream, kLogStreamSystem);
}

TEST_F(LogStorageTest, LinesStoredOneARowByOlderFarmdsStillReadFirst) {
  // A log begun before log chunks existed: its first lines are rows of log_lines.
  for (int seq = 1; seq <= 3; ++seq) {
    auto ins = db_->Prepare(
        "INSERT INTO log_lines(job_id, attempt, seq, stream, text, time_ms) VALUES (?,?,?,?,?,?)");
    ASSERT_OK(ins.status());
    (*ins)
        ->Bind(job_id_)
        .Bind(1)
        .Bind(seq)
        .Bind(1)
        .BindBlob("old " + std::to_string(seq))
        .Bind(seq);
    ASSERT_OK((*ins)->Run());
  }
  auto up = db_->Prepare("UPDATE attempts SET log_acked_seq = 3 WHERE job_id = ?");
  ASSERT_OK(up.status());
  (*up)->Bind(job_id_);
  ASSERT_OK((*up)->Run());
  ASSERT_EQ(store_->AppendLogLines(job_id_, 1, {{4, 1, "new 4", 4}, {5, 2, "new 5", 5}}).value(),
            5);
  auto all = store_->GetLogLines(job_id_, 1, 0, 100);
  ASSERT_OK(all.status());
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ(all->at(0).text, "old 1");
  EXPECT_EQ(all->at(2).text, "old 3");
  EXPECT_EQ(all->at(3).text, "new 4");
  EXPECT_EQ(all->at(4).stream, 2);
  auto page = store_->GetLogLines(job_id_, 1, 2, 2);
  ASSERT_OK(page.status());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ(page->at(0).seq, 3);
  EXPECT_EQ(page->at(1).seq, 4);
}

TEST_F(LogStorageTest, ALogSentALineAtATimeTakesFewRows) {
  // A build printing now and then: the worker sends its lines one or two at a time.
  for (int64_t seq = 1; seq <= 1000; ++seq) {
    ASSERT_EQ(
        store_->AppendLogLines(job_id_, 1, {{seq, 1, "line " + std::to_string(seq), seq}}).value(),
        seq);
  }
  EXPECT_LE(Query("SELECT COUNT(*) FROM log_chunks"), 5);
  auto all = store_->GetLogLines(job_id_, 1, 0, 2000);
  ASSERT_OK(all.status());
  ASSERT_EQ(all->size(), 1000u);
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(all->at(static_cast<size_t>(i)).seq, i + 1);
    ASSERT_EQ(all->at(static_cast<size_t>(i)).text, "line " + std::to_string(i + 1));
  }
  auto page = store_->GetLogLines(job_id_, 1, 500, 3);
  ASSERT_OK(page.status());
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ(page->at(0).text, "line 501");
}

TEST_F(LogStorageTest, EmptyLinesCountAgainstTheLimit) {
  // A line costs its text and its line break: a flood of empty lines stops at the limit.
  std::vector<LogLineRow> empty;
  for (int64_t seq = 1; seq <= 1000; ++seq) empty.push_back({seq, 1, "", seq});
  ASSERT_EQ(store_->AppendLogLines(job_id_, 1, empty, 100).value(), 1000);
  auto stored = store_->GetLogLines(job_id_, 1, 0, 2000);
  ASSERT_OK(stored.status());
  ASSERT_EQ(stored->size(), 101u);  // 100 empty lines, then the line saying the log was cut
  EXPECT_NE(stored->back().text.find("log truncated"), std::string::npos);
}

}  // namespace
}  // namespace farm::store
