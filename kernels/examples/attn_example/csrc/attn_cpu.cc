// CPU reference attention: double accumulation, one (batch, head, query row) at a time,
// rows split over std::thread workers. Exceptions never leave this file.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include "attn_example.h"

namespace {

void SetError(char* err, size_t err_len, const char* fmt, ...) {
  if (err == nullptr || err_len == 0) return;
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(err, err_len, fmt, args);
  va_end(args);
}

// One output row: softmax over the visible keys of query `i`, then the weighted sum of V.
void ReferenceRow(const float* q, const float* k, const float* v, float* out, int N, int D, int i,
                  bool causal, double scale, std::vector<double>& scores,
                  std::vector<double>& acc) {
  const int visible = causal ? i + 1 : N;
  double max_score = -INFINITY;
  for (int j = 0; j < visible; ++j) {
    double dot = 0.0;
    for (int d = 0; d < D; ++d) dot += double(q[d]) * double(k[size_t(j) * D + d]);
    scores[j] = dot * scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0.0;
  std::fill(acc.begin(), acc.end(), 0.0);
  for (int j = 0; j < visible; ++j) {
    const double p = std::exp(scores[j] - max_score);
    sum += p;
    for (int d = 0; d < D; ++d) acc[d] += p * double(v[size_t(j) * D + d]);
  }
  for (int d = 0; d < D; ++d) out[d] = float(acc[d] / sum);
}

// Rows [begin, end) of the flattened (B*H*N) row space. Sets *failed when its scratch
// space cannot be allocated (runs on worker threads, so nothing may escape).
void ReferenceRows(const float* q, const float* k, const float* v, float* out, int N, int D,
                   bool causal, double scale, size_t begin, size_t end,
                   std::atomic<bool>* failed) noexcept {
  std::vector<double> scores, acc;
  try {
    scores.resize(N);
    acc.resize(D);
  } catch (const std::exception&) {
    failed->store(true);
    return;
  }
  for (size_t row = begin; row < end; ++row) {
    const size_t head = row / N;
    const int i = int(row % N);
    const size_t head_off = head * size_t(N) * D;
    ReferenceRow(q + row * D, k + head_off, v + head_off, out + row * D, N, D, i, causal, scale,
                 scores, acc);
  }
}

}  // namespace

extern "C" ATTN_API const char* attn_version(void) { return "0.1.0"; }

extern "C" ATTN_API int attn_forward_cpu(const float* q, const float* k, const float* v, float* out,
                                         int B, int H, int N, int D, int causal, float scale,
                                         int threads, char* err, size_t err_len) {
  if (!q || !k || !v || !out) {
    SetError(err, err_len, "null buffer");
    return ATTN_INVALID_ARGUMENT;
  }
  if (B <= 0 || H <= 0 || N <= 0 || D <= 0) {
    SetError(err, err_len, "shape must be positive, got B=%d H=%d N=%d D=%d", B, H, N, D);
    return ATTN_INVALID_ARGUMENT;
  }
  const double s = scale > 0 ? double(scale) : 1.0 / std::sqrt(double(D));
  const size_t rows = size_t(B) * H * N;
  unsigned n = threads > 0 ? unsigned(threads) : std::max(1u, std::thread::hardware_concurrency());
  n = unsigned(std::min<size_t>(n, std::max<size_t>(1, rows / 16)));
  // Rows a thread could not be started for run on the calling thread instead, so a
  // failed spawn degrades speed, not the result.
  std::vector<std::thread> pool;
  std::atomic<bool> failed{false};
  const size_t per = (rows + n - 1) / n;
  size_t next = 0;
  try {
    pool.reserve(n);
    for (unsigned t = 0; t + 1 < n && next < rows; ++t) {
      const size_t end = std::min(rows, next + per);
      pool.emplace_back(ReferenceRows, q, k, v, out, N, D, causal != 0, s, next, end, &failed);
      next = end;
    }
  } catch (const std::exception&) {
  }
  ReferenceRows(q, k, v, out, N, D, causal != 0, s, next, rows, &failed);
  for (auto& th : pool) th.join();
  if (failed.load()) {
    SetError(err, err_len, "cpu reference: out of memory for N=%d D=%d scratch", N, D);
    return ATTN_OUT_OF_MEMORY;
  }
  return ATTN_OK;
}
