// Bounded exponential backoff for reconnecting to farmd: 0.5 s doubling to 10 s, reset
// after a success. Not thread-safe; each loop owns one.
#ifndef FARM_WORKER_CLIENT_BACKOFF_H_
#define FARM_WORKER_CLIENT_BACKOFF_H_

#include <algorithm>
#include <cstdint>

namespace farm::agent {

class Backoff {
 public:
  explicit Backoff(int64_t initial_ms = 500, int64_t max_ms = 10000)
      : initial_ms_(initial_ms), max_ms_(max_ms), next_ms_(initial_ms) {}

  // Returns the delay before the next try and doubles the one after (up to the cap).
  int64_t NextDelayMs() {
    int64_t d = next_ms_;
    next_ms_ = std::min(max_ms_, next_ms_ * 2);
    return d;
  }
  void Reset() { next_ms_ = initial_ms_; }

 private:
  int64_t initial_ms_, max_ms_, next_ms_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_CLIENT_BACKOFF_H_
