#include "worker/agent/log_shipper.h"

#include <map>

#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

// Behaves like farmd's UploadLog: stores seqs it lacks, ignores ones it has, answers the
// highest seq stored without gap. Can fail before storing (farmd down) or after storing
// (the answer is lost on the way back).
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
    for (const auto& l : lines) {
      EXPECT_EQ(l.job_id(), job_id);
      EXPECT_EQ(l.attempt(), attempt);
      if (stored.count(l.seq())) ++duplicates_sent;
      stored.emplace(l.seq(), l.text());
    }
    if (mode == Mode::kLoseAnswer) return Status::Unavailable("stream reset");
    int64_t acked = 0;
    while (stored.count(acked + 1)) ++acked;
    return acked;
  }
  Mode mode = Mode::kOk;
  int calls = 0;
  int duplicates_sent = 0;
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

}  // namespace
}  // namespace farm::agent
