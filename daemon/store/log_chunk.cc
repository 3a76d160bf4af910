#include "daemon/store/log_chunk.h"

#include <zstd.h>

#include <memory>

namespace farm::store {
namespace {

// zstd's fastest level: chunks are compressed under the store's lock, and build logs
// shrink several times over at it already.
constexpr int kZstdLevel = 1;

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// a - b and a + b wrapping around instead of overflowing: a time comes from a worker.
int64_t Minus(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t Plus(int64_t a, uint64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + b); }

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (0 - (v & 1))); }

// Reads packed records, refusing anything that runs past the end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return at_ == data_.size(); }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= data_.size()) return false;
      auto byte = static_cast<uint8_t>(data_[at_++]);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool Byte(uint8_t* b) {
    if (at_ >= data_.size()) return false;
    *b = static_cast<uint8_t>(data_[at_++]);
    return true;
  }
  bool Bytes(uint64_t n, std::string_view* out) {
    if (n > data_.size() - at_) return false;
    *out = data_.substr(at_, n);
    at_ += n;
    return true;
  }

 private:
  std::string_view data_;
  size_t at_ = 0;
};

struct CctxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DctxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// One context per thread: creating one per chunk costs more than compressing a small one.
ZSTD_CCtx* Cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CctxFree> ctx(ZSTD_createCCtx());
  return ctx.get();
}
ZSTD_DCtx* Dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DctxFree> ctx(ZSTD_createDCtx());
  return ctx.get();
}

// The chunk's stored form: compressed when zstd makes it smaller.
void Seal(std::string packed, LogChunk* chunk) {
  chunk->raw_bytes = static_cast<int64_t>(packed.size());
  std::string compressed(ZSTD_compressBound(packed.size()), '\0');
  size_t n = Cctx() == nullptr ? 0
                               : ZSTD_compressCCtx(Cctx(), compressed.data(), compressed.size(),
                                                   packed.data(), packed.size(), kZstdLevel);
  if (n == 0 || ZSTD_isError(n) || n >= packed.size()) {
    chunk->codec = kLogCodecRaw;
    chunk->data = std::move(packed);
    return;
  }
  compressed.resize(n);
  chunk->codec = kLogCodecZstd;
  chunk->data = std::move(compressed);
}

}  // namespace

std::vector<LogChunk> PackLogChunks(const std::vector<LogLineRow>& lines) {
  std::vector<LogChunk> out;
  std::string packed;
  LogChunk chunk;
  int64_t prev_seq = 0, prev_time = 0;
  for (const LogLineRow& line : lines) {
    if (chunk.lines == 0) {
      chunk.first_seq = line.seq;
      prev_seq = prev_time = 0;
    }
    PutVarint(static_cast<uint64_t>(line.seq) - static_cast<uint64_t>(prev_seq), &packed);
    packed.push_back(static_cast<char>(line.stream));
    PutVarint(ZigZag(Minus(line.time_ms, prev_time)), &packed);
    PutVarint(line.text.size(), &packed);
    packed += line.text;
    prev_seq = line.seq;
    prev_time = line.time_ms;
    chunk.last_seq = line.seq;
    ++chunk.lines;
    if (packed.size() >= kLogChunkTargetBytes) {
      Seal(std::move(packed), &chunk);
      out.push_back(std::move(chunk));
      packed.clear();
      chunk = LogChunk();
    }
  }
  if (chunk.lines > 0) {
    Seal(std::move(packed), &chunk);
    out.push_back(std::move(chunk));
  }
  return out;
}

Status UnpackLogChunk(int codec, int64_t raw_bytes, const std::string& data, int64_t after_seq,
                      size_t limit, std::vector<LogLineRow>* out) {
  const Status damaged = Status::DataLoss("a stored log chunk is damaged");
  if (raw_bytes < 0 || raw_bytes > kLogChunkMaxRawBytes) return damaged;
  std::string inflated;
  std::string_view packed = data;
  if (codec == kLogCodecZstd) {
    inflated.resize(static_cast<size_t>(raw_bytes));
    size_t n = Dctx() == nullptr ? 0
                                 : ZSTD_decompressDCtx(Dctx(), inflated.data(), inflated.size(),
                                                       data.data(), data.size());
    if (ZSTD_isError(n) || n != inflated.size()) return damaged;
    packed = inflated;
  } else if (codec != kLogCodecRaw || static_cast<int64_t>(data.size()) != raw_bytes) {
    return damaged;
  }
  Reader r(packed);
  int64_t seq = 0, time = 0;
  while (!r.done() && out->size() < limit) {
    uint64_t dseq = 0, dtime = 0, size = 0;
    uint8_t stream = 0;
    std::string_view text;
    if (!r.Varint(&dseq) || !r.Byte(&stream) || !r.Varint(&dtime) || !r.Varint(&size) ||
        !r.Bytes(size, &text)) {
      return damaged;
    }
    seq = Plus(seq, dseq);
    time = Plus(time, static_cast<uint64_t>(UnZigZag(dtime)));
    if (seq > after_seq) out->push_back(LogLineRow{seq, stream, std::string(text), time});
  }
  return Status::Ok();
}

}  // namespace farm::store
