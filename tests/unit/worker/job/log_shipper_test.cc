#include "worker/job/log_shipper.h"

#include <atomic>
#include <map>
#include <regex>

#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

// Behaves like farmd's UploadLog (SqlStore::AppendLogLines): stores seqs it lacks,
// ignores ones it has, stops at a gap, answers the highest seq stored without gap. Can
// fail before storing (farmd down) or after storing (the answer is lost on the way back).
// Counts resent seqs whose text changed: farmd would keep the old text.
class FakeFarmLog final : public LogSink {
 public:
  enum class Mode { kOk, kDown, kLoseAnswer, kRefuse };
  Result<int64_t> Send(int64_t job_id, int32_t attempt,
                       const std::vector<farm::v1::LogLine>& lines) override {
    ++calls;
    sizes.push_back(lines.size());
    if (!lines.empty()) first_seqs.push_back(lines.front().seq());
    if (mode == Mode::kDown) return Status::Unavailable("connection refused");
    if (mode == Mode::kRefuse) return Status::PermissionDenied("not your attempt");
    int64_t acked = Acked();
    for (const auto& l : lines) {
      EXPECT_EQ(l.job_id(), job_id);
      EXPECT_EQ(l.attempt(), attempt);
      if (stored.count(l.seq())) {
        ++duplicates_sent;
        if (stored[l.seq()] != l.text()) ++changed_resends;
        continue;
      }
      if (l.seq() != acked + 1) {
        ++gaps;
        break;
      }
      stored.emplace(l.seq(), l.text());
      streams.emplace(l.seq(), l.stream());
      acked = l.seq();
    }
    if (mode == Mode::kLoseAnswer) return Status::Unavailable("stream reset");
    return acked;
  }
  int64_t Acked() const {
    int64_t acked = 0;
    while (stored.count(acked + 1)) ++acked;
    return acked;
  }
  Mode mode = Mode::kOk;
  int calls = 0;
  int duplicates_sent = 0;
  int changed_resends = 0;
  int gaps = 0;
  std::map<int64_t, farm::v1::LogStream> streams;
  std::vector<size_t> sizes;
  std::vector<int64_t> first_seqs;
  std::map<int64_t, std::string> stored;
};

class LogShipperTest : public ::testing::Test {
 protected:
  void AppendN(LogShipper& s, int n, const std::string& prefix = "line") {
    for (int i = 0; i < n; ++i) s.Append(farm::v1::STDOUT, prefix + std::to_string(i));
  }
  FakeFarmLog farm_;
  testing::FakeClock clock_;
};

TEST_F(LogShipperTest, SeqStartsAtOnePerAttemptAndBatchesByTimeOrCount) {
  LogShipper s(farm_, clock_, 5, 1);
  EXPECT_EQ(s.Append(farm::v1::SYSTEM, "farm: fetching source"), 1);
  EXPECT_EQ(s.Append(farm::v1::STDERR, "warning"), 2);
  EXPECT_FALSE(s.Due());
  clock_.Advance(199);
  EXPECT_FALSE(s.Due());
  clock_.Advance(1);
  EXPECT_TRUE(s.Due());
  ASSERT_OK(s.SendOnce());
  EXPECT_EQ(s.acked_seq(), 2);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_FALSE(s.Due());
  AppendN(s, 199);
  EXPECT_FALSE(s.Due());
  AppendN(s, 1);
  EXPECT_TRUE(s.Due());  // 200 lines leave at once
  ASSERT_OK(s.SendOnce());
  EXPECT_EQ(farm_.sizes, (std::vector<size_t>{2, 200}));
  EXPECT_EQ(s.acked_seq(), 202);
}

// The heartbeat reports the newest line's seq: every line counts, whichever stream it is
// on and whether or not it has been sent yet.
TEST_F(LogShipperTest, PublishesTheNewestSeqOfEveryStream) {
  std::atomic<int64_t> published{0};
  LogShipperOptions options;
  options.published_seq = &published;
  LogShipper s(farm_, clock_, 5, 1, options);
  s.Append(farm::v1::SYSTEM, "farm: building");
  EXPECT_EQ(published.load(), 1);
  AppendN(s, 3);  // build output
  EXPECT_EQ(published.load(), 4);
  s.Append(farm::v1::STDERR, "warning");
  EXPECT_EQ(published.load(), 5);
  EXPECT_EQ(published.load(), s.last_seq());
}

TEST_F(LogShipperTest, ResendsFromAckedPlusOneAfterFarmdComesBack) {
  LogShipper s(farm_, clock_, 5, 1);
  AppendN(s, 10);
  clock_.Advance(200);
  ASSERT_OK(s.SendOnce());
  farm_.mode = FakeFarmLog::Mode::kDown;
  AppendN(s, 5, "during-outage");
  clock_.Advance(200);
  EXPECT_EQ(s.SendOnce().code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.pending(), 5u);
  EXPECT_FALSE(s.Due());  // backing off
  clock_.Advance(500);
  EXPECT_TRUE(s.Due());
  farm_.mode = FakeFarmLog::Mode::kOk;
  AppendN(s, 3, "after");
  ASSERT_OK(s.SendOnce());
  EXPECT_EQ(farm_.first_seqs.back(), 11);
  EXPECT_EQ(s.acked_seq(), 18);
  ASSERT_EQ(farm_.stored.size(), 18u);
  EXPECT_EQ(farm_.stored.rbegin()->first, 18);
  EXPECT_EQ(farm_.duplicates_sent, 0);
}

TEST_F(LogShipperTest, LostAnswerMeansResendWhichFarmdIgnoresSoNoGapNoDuplicate) {
  LogShipper s(farm_, clock_, 5, 1);
  AppendN(s, 4);
  clock_.Advance(200);
  farm_.mode = FakeFarmLog::Mode::kLoseAnswer;
  EXPECT_FALSE(s.SendOnce().ok());
  farm_.mode = FakeFarmLog::Mode::kOk;
  AppendN(s, 2);
  clock_.Advance(10000);
  ASSERT_OK(s.SendOnce());
  EXPECT_EQ(s.acked_seq(), 6);
  ASSERT_EQ(farm_.stored.size(), 6u);
  int64_t expect = 1;
  for (const auto& [seq, text] : farm_.stored) EXPECT_EQ(seq, expect++);
  EXPECT_EQ(farm_.stored[5], "line0");
}

TEST_F(LogShipperTest, BacklogGoesOutInBoundedSends) {
  LogShipperOptions options;
  options.max_lines_per_send = 100;
  LogShipper s(farm_, clock_, 5, 1, options);
  AppendN(s, 250);
  ASSERT_OK(s.Finish(clock_.SteadyMs() + 1));  // fake clock: deadline never passes in the loop
  EXPECT_EQ(farm_.sizes, (std::vector<size_t>{100, 100, 50}));
  EXPECT_EQ(s.acked_seq(), 250);
  EXPECT_EQ(s.last_seq(), 250);
}

TEST_F(LogShipperTest, RefusedAttemptDropsItsLog) {
  LogShipper s(farm_, clock_, 5, 1);
  AppendN(s, 3);
  farm_.mode = FakeFarmLog::Mode::kRefuse;
  EXPECT_EQ(s.SendOnce().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.pending(), 0u);
  AppendN(s, 3);
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(s.last_seq(), 6);
}

TEST_F(LogShipperTest, BackgroundThreadShipsWithTheRealClock) {
  LogShipper s(farm_, RealClock(), 9, 3);
  s.Start();
  AppendN(s, 3);
  ASSERT_OK(s.Finish(RealClock().SteadyMs() + 5000));
  EXPECT_EQ(farm_.stored.size(), 3u);
  EXPECT_EQ(s.acked_seq(), 3);
}

// Checks what farmd ended with: seqs 1..N, the job's lines "line<i>" in order, and every
// run of lines missing from them replaced by exactly one marker that counts them.
struct Replay {
  int64_t lines_seen = 0;     // job lines stored as they were
  int64_t lines_dropped = 0;  // as the markers say
  int64_t bytes_dropped = 0;
  int markers = 0;
};

Replay ReplayStored(const FakeFarmLog& farm, int64_t total) {
  static const std::regex kMarker(
      R"(farm: (\d+) log lines \((\d+) bytes\) dropped here: farmd did not acknowledge.*)");
  Replay r;
  int64_t next = 0;  // index of the next job line expected
  bool last_was_marker = false;
  int64_t seq = 0;
  for (const auto& [stored_seq, text] : farm.stored) {
    EXPECT_EQ(stored_seq, ++seq) << "gap in what farmd stored";
    std::smatch m;
    if (farm.streams.at(stored_seq) == farm::v1::SYSTEM && std::regex_match(text, m, kMarker)) {
      EXPECT_FALSE(last_was_marker) << "two markers in a row at seq " << stored_seq;
      int64_t n = std::stoll(m[1]);
      int64_t bytes = 0;
      for (int64_t i = next; i < next + n; ++i) bytes += ("line" + std::to_string(i)).size();
      EXPECT_EQ(std::stoll(m[2]), bytes) << "bytes of marker at seq " << stored_seq;
      next += n;
      r.lines_dropped += n;
      r.bytes_dropped += bytes;
      ++r.markers;
      last_was_marker = true;
      continue;
    }
    EXPECT_EQ(text, "line" + std::to_string(next)) << "at seq " << stored_seq;
    ++next;
    ++r.lines_seen;
    last_was_marker = false;
  }
  EXPECT_EQ(next, total) << "every line is either stored or counted by a marker";
  return r;
}

TEST_F(LogShipperTest, OutageKeepsOldestAndNewestLinesWithOneMarkerBetween) {
  LogShipperOptions options;
  options.max_buffered_lines = 100;
  LogShipper s(farm_, clock_, 5, 1, options);
  farm_.mode = FakeFarmLog::Mode::kDown;
  for (int i = 0; i < 1000; ++i) {
    s.Append(farm::v1::STDOUT, "line" + std::to_string(i));
    ASSERT_LE(s.pending(), 100u) << "after line " << i;
    if (i % 97 == 0) {
      clock_.Advance(20000);
      EXPECT_EQ(s.SendOnce().code(), StatusCode::kUnavailable);
    }
  }
  EXPECT_GT(s.dropped_lines(), 800);
  EXPECT_EQ(s.last_seq(), static_cast<int64_t>(s.pending()));  // seqs without gap
  farm_.mode = FakeFarmLog::Mode::kOk;
  clock_.Advance(20000);  // past the backoff
  ASSERT_OK(s.Finish(clock_.SteadyMs() + 1));
  EXPECT_EQ(s.acked_seq(), s.last_seq());
  EXPECT_EQ(farm_.gaps, 0);
  EXPECT_EQ(farm_.changed_resends, 0);
  Replay r = ReplayStored(farm_, 1000);
  EXPECT_EQ(r.markers, 1);
  EXPECT_EQ(r.lines_dropped, s.dropped_lines());
  EXPECT_EQ(farm_.stored.at(1), "line0");               // the start ...
  EXPECT_EQ(farm_.stored.rbegin()->second, "line999");  // ... and the newest lines
  EXPECT_GE(r.lines_seen, 25);
}

TEST_F(LogShipperTest, ByteBoundHoldsForLongLinesAndTheDefaultIs64MiB) {
  EXPECT_EQ(LogShipperOptions{}.max_buffered_bytes, size_t{64} << 20);
  LogShipper s(farm_, clock_, 5, 1);  // the defaults
  farm_.mode = FakeFarmLog::Mode::kDown;
  const std::string kb(1024, 'x');
  for (int i = 0; i < 100000; ++i) {  // about 110 MiB of output
    s.Append(farm::v1::STDERR, kb);
    ASSERT_LE(s.buffered_bytes(), size_t{64} << 20) << "after line " << i;
  }
  EXPECT_GT(s.dropped_lines(), 30000);
  EXPECT_EQ(s.last_seq(), static_cast<int64_t>(s.pending()));
}

TEST_F(LogShipperTest, LinesFarmdMayHaveStoredAreNeverRenumbered) {
  LogShipperOptions options;
  options.max_buffered_lines = 40;
  LogShipper s(farm_, clock_, 5, 1, options);
  AppendN(s, 35);
  clock_.Advance(200);
  farm_.mode = FakeFarmLog::Mode::kLoseAnswer;  // farmd stores 1..10, the worker hears nothing
  EXPECT_FALSE(s.SendOnce().ok());
  farm_.mode = FakeFarmLog::Mode::kDown;
  for (int i = 35; i < 500; ++i) s.Append(farm::v1::STDOUT, "line" + std::to_string(i));
  EXPECT_LE(s.pending(), 40u);
  farm_.mode = FakeFarmLog::Mode::kOk;
  clock_.Advance(20000);  // past the backoff
  ASSERT_OK(s.Finish(clock_.SteadyMs() + 1));
  EXPECT_EQ(farm_.sizes.front(), 10u);  // a batch stays within a quarter of the bound
  EXPECT_EQ(farm_.changed_resends, 0);  // seqs 1..10 still mean the same lines
  EXPECT_EQ(farm_.gaps, 0);
  Replay r = ReplayStored(farm_, 500);
  EXPECT_GE(r.lines_seen, 10);
  EXPECT_EQ(r.lines_dropped, s.dropped_lines());
}

TEST_F(LogShipperTest, FlappingFarmdGetsOneMarkerPerDropAndNoGap) {
  LogShipperOptions options;
  options.max_buffered_lines = 60;
  LogShipper s(farm_, clock_, 5, 1, options);
  int next = 0;
  for (int round = 0; round < 4; ++round) {
    farm_.mode = FakeFarmLog::Mode::kDown;
    for (int i = 0; i < 300; ++i) {
      s.Append(farm::v1::STDOUT, "line" + std::to_string(next++));
      ASSERT_LE(s.pending(), 60u);
    }
    farm_.mode = FakeFarmLog::Mode::kOk;  // up long enough for one send
    clock_.Advance(20000);
    ASSERT_OK(s.SendOnce());
  }
  ASSERT_OK(s.Finish(clock_.SteadyMs() + 1));
  EXPECT_EQ(farm_.gaps, 0);
  EXPECT_EQ(farm_.changed_resends, 0);
  Replay r = ReplayStored(farm_, next);
  EXPECT_GE(r.markers, 4);
  EXPECT_EQ(r.lines_dropped, s.dropped_lines());
  EXPECT_EQ(s.acked_seq(), s.last_seq());
  EXPECT_EQ(s.last_seq(), static_cast<int64_t>(farm_.stored.size()));
}

TEST_F(LogShipperTest, NoDropWhileWithinBounds) {
  LogShipperOptions options;
  options.max_buffered_lines = 100;
  LogShipper s(farm_, clock_, 5, 1, options);
  farm_.mode = FakeFarmLog::Mode::kDown;
  AppendN(s, 100);
  EXPECT_EQ(s.dropped_lines(), 0);
  EXPECT_EQ(s.buffered_bytes(), 100 * kLogLineOverheadBytes + 590);  // "line0".."line99"
  int64_t seq = s.Append(farm::v1::STDOUT, "line100");
  EXPECT_EQ(seq, s.last_seq());
  EXPECT_LT(seq, 101);  // moved down behind the marker
  EXPECT_GT(s.dropped_lines(), 0);
}

}  // namespace
}  // namespace farm::agent
