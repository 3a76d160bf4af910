// Retrying farmd calls that failed with UNAVAILABLE (farmd restarting, network blip):
// bounded exponential backoff (0.5 s doubling to 10 s) until a deadline. Stateless.
#ifndef FARM_WORKER_CLIENT_RETRY_H_
#define FARM_WORKER_CLIENT_RETRY_H_

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "worker/client/backoff.h"
#include "worker/client/farm_client.h"

namespace farm::agent {

inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

// Calls `fn` (returning Status or Result<T>) until it succeeds, fails with a code other
// than UNAVAILABLE, or the steady clock passes `deadline_ms`. Returns the last outcome.
template <typename Fn>
auto RetryUnavailable(const Clock& clock, int64_t deadline_ms, FarmClient* client, Fn fn)
    -> decltype(fn()) {
  Backoff backoff;
  for (int i = 0;; ++i) {
    auto r = fn();
    if (r.ok() || StatusOf(r).code() != StatusCode::kUnavailable || i >= 1000) return r;
    int64_t left = deadline_ms - clock.SteadyMs();
    if (left <= 0) return r;
    if (client != nullptr) client->Reconnect();
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(left, backoff.NextDelayMs())));
  }
}

}  // namespace farm::agent

#endif  // FARM_WORKER_CLIENT_RETRY_H_
