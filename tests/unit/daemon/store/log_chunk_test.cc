#include "daemon/store/log_chunk.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/support/test_util.h"

namespace farm::store {
namespace {

std::vector<LogLineRow> Unpack(const std::vector<LogChunk>& chunks, int64_t after = 0,
                               size_t limit = 1'000'000) {
  std::vector<LogLineRow> out;
  for (const LogChunk& c : chunks) {
    EXPECT_OK(UnpackLogChunk(c.codec, c.raw_bytes, c.data, after, limit, &out));
  }
  return out;
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(LogChunkTest, EveryFieldOfEveryLineComesBack) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<LogLineRow> lines = {
      {1, 1, "first", 1700000000000},
      {2, 2, std::string("nul \0 inside", 12), 1699999999990},  // the clock went back
      {7, kLogStreamSystem, "", 1700000000005},                 // a gap in seq, empty text
      {8, 1, std::string(70000, 'y'), -5},
      {kMax - 1, 1, "far", kMax},
  };
  auto chunks = PackLogChunks(lines);
  auto back = Unpack(chunks);
  ASSERT_EQ(back.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(back[i].seq, lines[i].seq) << i;
    EXPECT_EQ(back[i].stream, lines[i].stream) << i;
    EXPECT_EQ(back[i].text, lines[i].text) << i;
    EXPECT_EQ(back[i].time_ms, lines[i].time_ms) << i;
  }
}

TEST(LogChunkTest, ChunksSplitNearTheTargetAndCoverTheirSeqs) {
  std::vector<LogLineRow> lines;
  for (int64_t i = 1; i <= 3000; ++i) lines.push_back({i, 1, std::string(300, 'a'), i});
  auto chunks = PackLogChunks(lines);
  ASSERT_GE(chunks.size(), 3u);
  int64_t next = 1;
  for (const LogChunk& c : chunks) {
    EXPECT_EQ(c.first_seq, next);
    EXPECT_LE(c.raw_bytes, static_cast<int64_t>(kLogChunkTargetBytes + 400));
    EXPECT_EQ(c.last_seq - c.first_seq + 1, c.lines);
    next = c.last_seq + 1;
  }
  EXPECT_EQ(next, 3001);
  EXPECT_EQ(Unpack(chunks).size(), 3000u);
}

TEST(LogChunkTest, TextThatCompressesIsCompressedAndNoiseIsNot) {
  std::vector<LogLineRow> text, noise;
  std::mt19937_64 rng(7);
  for (int64_t i = 1; i <= 200; ++i) {
    text.push_back(
        {i, 1, "[" + std::to_string(i) + "/200] Building CUDA object csrc/attn.cu.o", i});
    noise.push_back({i, 1, RandomBytes(rng, 1000), i});
  }
  auto packed_text = PackLogChunks(text);
  ASSERT_EQ(packed_text.size(), 1u);
  EXPECT_EQ(packed_text[0].codec, kLogCodecZstd);
  EXPECT_LT(packed_text[0].data.size() * 4, static_cast<size_t>(packed_text[0].raw_bytes));
  auto packed_noise = PackLogChunks(noise);
  ASSERT_EQ(packed_noise.size(), 1u);
  EXPECT_EQ(packed_noise[0].codec, kLogCodecRaw);
  // Noise costs its bytes and a few per line.
  EXPECT_LE(packed_noise[0].data.size(), 200u * (1000 + 8));
  EXPECT_EQ(Unpack(packed_noise)[199].text, noise[199].text);
}

TEST(LogChunkTest, ReadingStartsAfterASeqAndStopsAtTheLimit) {
  std::vector<LogLineRow> lines;
  for (int64_t i = 1; i <= 50; ++i) lines.push_back({i * 2, 1, "l" + std::to_string(i), i});
  auto chunks = PackLogChunks(lines);
  auto some = Unpack(chunks, /*after=*/41, /*limit=*/3);
  ASSERT_EQ(some.size(), 3u);
  EXPECT_EQ(some[0].seq, 42);
  EXPECT_EQ(some[2].seq, 46);
  EXPECT_TRUE(Unpack(chunks, 100).empty());
}

TEST(LogChunkTest, ADamagedChunkIsDataLossNotACrash) {
  std::vector<LogLineRow> lines;
  for (int64_t i = 1; i <= 100; ++i) lines.push_back({i, 1, "line " + std::to_string(i), i});
  LogChunk c = PackLogChunks(lines).at(0);
  ASSERT_EQ(c.codec, kLogCodecZstd);
  auto code = [](int codec, int64_t raw, const std::string& data) {
    std::vector<LogLineRow> out;
    return UnpackLogChunk(codec, raw, data, 0, 1000, &out).code();
  };
  EXPECT_EQ(code(c.codec, c.raw_bytes, c.data.substr(0, c.data.size() / 2)), StatusCode::kDataLoss);
  EXPECT_EQ(code(c.codec, c.raw_bytes + 1, c.data), StatusCode::kDataLoss);
  EXPECT_EQ(code(c.codec, kLogChunkMaxRawBytes + 1, c.data), StatusCode::kDataLoss);
  EXPECT_EQ(code(c.codec, -1, c.data), StatusCode::kDataLoss);
  EXPECT_EQ(code(9, c.raw_bytes, c.data), StatusCode::kDataLoss);
  // Raw records that run past the end, or claim more text than there is.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk = RandomBytes(rng, rng() % 40);
    std::vector<LogLineRow> out;
    Status st =
        UnpackLogChunk(kLogCodecRaw, static_cast<int64_t>(junk.size()), junk, 0, 1000, &out);
    EXPECT_TRUE(st.ok() || st.code() == StatusCode::kDataLoss) << st.ToString();
  }
  const std::string too_long = std::string("\x01\x01\x00\x7f", 4) + "short";
  EXPECT_EQ(code(kLogCodecRaw, static_cast<int64_t>(too_long.size()), too_long),
            StatusCode::kDataLoss);
}

}  // namespace
}  // namespace farm::store
