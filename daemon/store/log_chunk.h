// Log chunks: how the store keeps an attempt's log lines. A row per line cost up to nine
// times the text (a row of about 1000 bytes in a WITHOUT ROWID table spills most of itself
// to an overflow page), so the lines a worker sends together are packed into one row of
// the log_chunks table (migration 020), compressed with zstd when that makes it smaller.
// Reading keeps the per-line API: every line has its seq, stream and time.
//
// A chunk's packed form is one record per line, seq ascending:
//   varint(seq - previous seq)  byte(stream)  varint(zigzag(time_ms - previous time_ms))
//   varint(text bytes)  text
// where the previous seq and time of the first record are 0. Codecs: kLogCodecRaw (the
// packed bytes), kLogCodecZstd (one zstd frame of them).
#ifndef FARM_DAEMON_STORE_LOG_CHUNK_H_
#define FARM_DAEMON_STORE_LOG_CHUNK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/store.h"

namespace farm::store {

inline constexpr int kLogCodecRaw = 0;
inline constexpr int kLogCodecZstd = 1;

// A chunk stops taking lines once its packed form reaches this size, so that reading a
// few lines never unpacks much more than that (a chunk of one line may be larger).
inline constexpr size_t kLogChunkTargetBytes = 256 << 10;
// The largest packed size a stored chunk may claim; a row saying more is refused as
// damaged rather than allocated.
inline constexpr int64_t kLogChunkMaxRawBytes = 64LL << 20;

struct LogChunk {
  int64_t first_seq = 0;
  int64_t last_seq = 0;
  int lines = 0;
  int codec = kLogCodecRaw;
  int64_t raw_bytes = 0;  // the packed form's size, before compression
  std::string data;       // the packed form, compressed when codec says so
};

// Packs `lines` (seq strictly ascending, at least one) into chunks of about
// kLogChunkTargetBytes each, compressing each one that zstd makes smaller.
std::vector<LogChunk> PackLogChunks(const std::vector<LogLineRow>& lines);

// Appends to `out` the lines of a stored chunk whose seq is above `after_seq`, until `out`
// holds `limit` lines. DataLoss when the row is damaged (a bad frame, a record that runs
// past the end, a size that disagrees).
Status UnpackLogChunk(int codec, int64_t raw_bytes, const std::string& data, int64_t after_seq,
                      size_t limit, std::vector<LogLineRow>* out);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_LOG_CHUNK_H_
