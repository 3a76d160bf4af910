#include "daemon/store/sql/log_flusher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/support/test_util.h"

namespace farm::store {
namespace {

using ::farm::testing::ScopedTempDir;

// Waits (bounded) until `done` holds; returns whether it did.
template <typename Pred>
bool Eventually(Pred done) {
  for (int i = 0; i < 5000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

TEST(LogFlusherTest, AWaitFlushesOnceAndAFlushedTicketNeedsNoOther) {
  int flushes = 0;
  LogFlusher flusher([&] {
    ++flushes;
    return 0;
  });
  flusher.WaitFlushed(0);  // nothing written: nothing to flush
  EXPECT_EQ(flushes, 0);
  int64_t ticket = flusher.Written();
  EXPECT_EQ(ticket, 1);
  flusher.WaitFlushed(ticket);
  EXPECT_EQ(flushes, 1);
  flusher.WaitFlushed(ticket);
  EXPECT_EQ(flushes, 1);
  EXPECT_EQ(flusher.flushes(), 1);
}

TEST(LogFlusherTest, ACommitCountedDuringAFlushWaitsForTheNextOne) {
  std::atomic<bool> release{false};
  std::atomic<int> flushes{0};
  LogFlusher* self = nullptr;
  LogFlusher flusher([&] {
    if (flushes.fetch_add(1) == 0) {
      // The first flush lasts until a second commit is counted behind it.
      EXPECT_TRUE(Eventually([&] { return self->written() == 2 && release.load(); }));
    }
    return 0;
  });
  self = &flusher;
  int64_t first = flusher.Written();
  std::thread leader([&] { flusher.WaitFlushed(first); });
  ASSERT_TRUE(Eventually([&] { return flushes.load() == 1; }));
  int64_t second = flusher.Written();
  std::atomic<bool> second_done{false};
  std::thread follower([&] {
    flusher.WaitFlushed(second);
    second_done = true;
  });
  release = true;
  leader.join();
  follower.join();
  EXPECT_TRUE(second_done.load());
  // The first flush began before the second commit was counted, so it could not cover it.
  EXPECT_EQ(flushes.load(), 2);
}

TEST(LogFlusherTest, WaitersShareOneFlush) {
  constexpr int kWriters = 8;
  std::atomic<int> flushes{0};
  LogFlusher* self = nullptr;
  LogFlusher flusher([&] {
    if (flushes.fetch_add(1) == 0) {
      // Hold the first flush until every writer has counted its commit.
      EXPECT_TRUE(Eventually([&] { return self->written() == kWriters; }));
    }
    return 0;
  });
  self = &flusher;
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&] { flusher.WaitFlushed(flusher.Written()); });
  }
  for (auto& t : writers) t.join();
  // The first flush covered the commits counted before it began; one more covered the rest.
  EXPECT_LE(flushes.load(), 2);
  EXPECT_GE(flushes.load(), 1);
}

TEST(LogFlusherTest, FlushesARealFileAndNothingForAnEmptyPath) {
  ScopedTempDir dir;
  std::string path = dir.path() + "/farm.db-wal";
  std::ofstream(path) << "frames";
  LogFlusher flusher(path);
  flusher.WaitFlushed(flusher.Written());
  EXPECT_EQ(flusher.flushes(), 1);
  LogFlusher in_memory{std::string()};
  in_memory.WaitFlushed(in_memory.Written());
  EXPECT_EQ(in_memory.flushes(), 1);
}

TEST(LogFlusherDeathTest, AFailedFlushEndsTheProcess) {
  EXPECT_DEATH(
      {
        LogFlusher flusher([] { return EIO; });
        flusher.WaitFlushed(flusher.Written());
      },
      "");
  ScopedTempDir dir;
  EXPECT_DEATH(
      {
        LogFlusher flusher(dir.path() + "/missing-wal");
        flusher.WaitFlushed(flusher.Written());
      },
      "");
}

}  // namespace
}  // namespace farm::store
