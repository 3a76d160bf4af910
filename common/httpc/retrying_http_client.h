// RetryingHttpClient: rate limiting and retry rules in front of an HttpClient, shared by
// the GitHub and Hugging Face clients (one instance per remote service).
//
// Rules (docs/publishing.md has the sources):
//  - 429, and 403 that is a rate limit (remaining = 0, retry-after, or "rate limit" in the
//    message), are always retried: the server rejected the request unprocessed. The wait
//    is retry-after (seconds or HTTP date), else the x-ratelimit-reset epoch when
//    x-ratelimit-remaining is 0, else the IETF `RateLimit: "api";r=0;t=55` reset, else a
//    secondary-limit backoff: rate_limit_base_ms doubling per hit (GitHub: >= 60 s).
//  - 408 and 5xx, and transport failures, are retried only for idempotent requests, with
//    server_error_base_ms doubling up to server_error_max_ms. A non-idempotent request
//    gets the failure back so its caller can check remote state before repeating it.
//  - A response reporting x-ratelimit-remaining: 0 (or RateLimit r=0) blocks every later
//    request until the reset; mutating requests are serialized and spaced at least
//    mutating_spacing_ms apart.
//  - A required wait longer than max_wait_ms is not slept: the last response is returned
//    so the caller can reschedule (HttpError maps it to ResourceExhausted).
// Time is read from a Clock and waits go through a Sleeper, so tests never sleep.
//
// Thread-safety: Send may be called concurrently; mutating requests run one at a time.
#ifndef FARM_COMMON_HTTPC_RETRYING_HTTP_CLIENT_H_
#define FARM_COMMON_HTTPC_RETRYING_HTTP_CLIENT_H_

#include <cstdint>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/httpc/http_client.h"

namespace farm::httpc {

// Blocks the calling thread; the seam that lets tests advance a fake clock instead.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void SleepMs(int64_t ms) = 0;
};

class RealSleeper final : public Sleeper {
 public:
  void SleepMs(int64_t ms) override;
};

// Returns a process-wide RealSleeper.
Sleeper& DefaultSleeper();

struct RetryOptions {
  int max_attempts = 5;                  // tries of one request, first included
  int64_t server_error_base_ms = 1'000;  // 408/5xx/transport backoff, doubling
  int64_t server_error_max_ms = 8'000;
  int64_t rate_limit_base_ms = 60'000;  // 403/429 without hints, doubling per hit
  int64_t rate_limit_max_ms = 900'000;
  int64_t mutating_spacing_ms = 1'000;  // between the end of one mutating request and the next
  int64_t reset_margin_ms = 1'000;      // added to x-ratelimit-reset waits (clock skew)
  int64_t max_wait_ms = 900'000;        // longer waits are handed back to the caller
};

// GitHub's documented rules: secondary limits wait >= 60 s, mutations >= 1 s apart.
RetryOptions GitHubRetryDefaults();
// huggingface_hub's http_backoff: 1 s doubling to 8 s, 5 tries; no mutation spacing.
RetryOptions HfRetryDefaults();

enum class Idempotency { kIdempotent, kNotIdempotent };

struct RetryDecision {
  bool retry = false;
  int64_t wait_ms = 0;
  std::string reason;  // for logs; never contains request headers
};

// Returns how long `response` asks the client to wait (retry-after, x-ratelimit-reset
// when remaining is 0, RateLimit r=0;t=N), or -1 when it gives no hint.
int64_t HintedWaitMs(const HttpResponse& response, int64_t now_unix_ms,
                     const RetryOptions& options);

// Decides what follows attempt `attempt` (1-based) ending in `outcome`. `rate_limit_hits`
// counts the unhinted rate-limit responses this request got before this one, so the
// first waits rate_limit_base_ms, the next twice that. Pure function.
RetryDecision DecideRetry(const Result<HttpResponse>& outcome, int attempt, int rate_limit_hits,
                          Idempotency idempotency, int64_t now_unix_ms,
                          const RetryOptions& options);

class RetryingHttpClient {
 public:
  // `inner`, `clock` and `sleeper` must outlive this object.
  RetryingHttpClient(HttpClient& inner, const Clock& clock, Sleeper& sleeper, RetryOptions options);

  // Sends `request` under the rules above. Returns the final outcome: a response of any
  // status (the caller interprets it) or a transport error.
  Result<HttpResponse> Send(const HttpRequest& request, Idempotency idempotency);

  // Sleeps the server-error backoff for retry number `attempt` (1-based), for callers
  // that repeat a non-idempotent request themselves after checking remote state.
  void Backoff(int attempt);

  const Clock& clock() const { return clock_; }
  const RetryOptions& options() const { return options_; }

 private:
  // Sleeps until no rate-limit block is in force and, for mutations, the spacing is met.
  void WaitForTurn(bool mutating);
  // Remembers a quota exhaustion reported by `outcome` so later requests wait for it.
  void RecordOutcome(const Result<HttpResponse>& outcome, bool mutating);

  HttpClient& inner_;
  const Clock& clock_;
  Sleeper& sleeper_;
  const RetryOptions options_;
  std::mutex mutating_mu_;  // held for one mutating attempt: mutations never overlap
  std::mutex state_mu_;
  int64_t blocked_until_unix_ms_ = 0;     // guarded by state_mu_
  int64_t last_mutation_steady_ms_ = -1;  // guarded by state_mu_
};

}  // namespace farm::httpc

#endif  // FARM_COMMON_HTTPC_RETRYING_HTTP_CLIENT_H_
