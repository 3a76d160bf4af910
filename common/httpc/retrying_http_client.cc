#include "common/httpc/retrying_http_client.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <thread>

#include "common/httpc/http_util.h"
#include "common/log.h"

namespace farm::httpc {
namespace {

// Parses a non-negative decimal; -1 when `text` is not one.
int64_t ParseSeconds(const std::string& text) {
  if (text.empty() || text.size() > 12) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Retry-After is delta-seconds or an HTTP date (RFC 9110 10.2.3); -1 when unreadable.
int64_t RetryAfterMs(const std::string& value, int64_t now_unix_ms) {
  int64_t seconds = ParseSeconds(value);
  if (seconds >= 0) return seconds * 1000;
  struct tm tm = {};
  if (strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return -1;
  return std::max<int64_t>(0, static_cast<int64_t>(timegm(&tm)) * 1000 - now_unix_ms);
}

// Reads `key=<digits>` from an IETF RateLimit header value; -1 when absent.
int64_t RateLimitParam(const std::string& value, const std::string& key) {
  for (size_t pos = value.find(key + "="); pos != std::string::npos;
       pos = value.find(key + "=", pos + 1)) {
    if (pos > 0 && value[pos - 1] != ';' && value[pos - 1] != ' ') continue;
    size_t start = pos + key.size() + 1;
    size_t end = value.find_first_not_of("0123456789", start);
    return ParseSeconds(value.substr(start, end == std::string::npos ? end : end - start));
  }
  return -1;
}

// Quota-exhaustion wait a response announces even when it succeeded; -1 when none.
int64_t ExhaustionWaitMs(const HttpResponse& r, int64_t now_unix_ms, const RetryOptions& o) {
  if (r.headers.GetOr("x-ratelimit-remaining", "") == "0") {
    int64_t reset = ParseSeconds(r.headers.GetOr("x-ratelimit-reset", ""));
    if (reset >= 0) return std::max<int64_t>(0, reset * 1000 - now_unix_ms) + o.reset_margin_ms;
  }
  if (auto rl = r.headers.Get("ratelimit"); rl && RateLimitParam(*rl, "r") == 0) {
    int64_t t = RateLimitParam(*rl, "t");
    if (t >= 0) return t * 1000;
  }
  return -1;
}

int64_t BackoffMs(int64_t base, int exponent, int64_t cap) {
  int64_t wait = base;
  for (int i = 0; i < exponent && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

bool IsRetryableServerStatus(int status) {
  return status == 408 || status == 500 || status == 502 || status == 503 || status == 504;
}

}  // namespace

void RealSleeper::SleepMs(int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

Sleeper& DefaultSleeper() {
  static RealSleeper sleeper;
  return sleeper;
}

RetryOptions GitHubRetryDefaults() { return RetryOptions(); }

RetryOptions HfRetryDefaults() {
  RetryOptions o;
  o.rate_limit_base_ms = 1'000;
  o.rate_limit_max_ms = 8'000;
  o.mutating_spacing_ms = 0;
  return o;
}

int64_t HintedWaitMs(const HttpResponse& response, int64_t now_unix_ms,
                     const RetryOptions& options) {
  if (auto retry_after = response.headers.Get("retry-after")) {
    int64_t ms = RetryAfterMs(*retry_after, now_unix_ms);
    if (ms >= 0) return ms;
  }
  return ExhaustionWaitMs(response, now_unix_ms, options);
}

RetryDecision DecideRetry(const Result<HttpResponse>& outcome, int attempt, int rate_limit_hits,
                          Idempotency idempotency, int64_t now_unix_ms,
                          const RetryOptions& options) {
  RetryDecision d;
  if (attempt >= options.max_attempts) return d;
  bool idempotent = idempotency == Idempotency::kIdempotent;
  if (!outcome.ok()) {
    StatusCode code = outcome.status().code();
    bool transport = code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded;
    if (!transport || !idempotent) return d;
    d.wait_ms = BackoffMs(options.server_error_base_ms, attempt - 1, options.server_error_max_ms);
    d.reason = "transport error: " + outcome.status().message();
  } else if (IsRateLimited(outcome.value())) {
    int64_t hinted = HintedWaitMs(outcome.value(), now_unix_ms, options);
    d.wait_ms = hinted >= 0 ? hinted
                            : BackoffMs(options.rate_limit_base_ms, rate_limit_hits,
                                        options.rate_limit_max_ms);
    d.reason = "rate limited (HTTP " + std::to_string(outcome.value().status) +
               (hinted >= 0 ? ", server hint)" : ", no hint: backoff)");
  } else if (IsRetryableServerStatus(outcome.value().status) && idempotent) {
    int64_t hinted = HintedWaitMs(outcome.value(), now_unix_ms, options);
    d.wait_ms = std::max(
        hinted, BackoffMs(options.server_error_base_ms, attempt - 1, options.server_error_max_ms));
    d.reason = "server error HTTP " + std::to_string(outcome.value().status);
  } else {
    return d;
  }
  d.retry = d.wait_ms <= options.max_wait_ms;
  return d;
}

RetryingHttpClient::RetryingHttpClient(HttpClient& inner, const Clock& clock, Sleeper& sleeper,
                                       RetryOptions options)
    : inner_(inner), clock_(clock), sleeper_(sleeper), options_(options) {}

void RetryingHttpClient::Backoff(int attempt) {
  sleeper_.SleepMs(
      BackoffMs(options_.server_error_base_ms, attempt - 1, options_.server_error_max_ms));
}

void RetryingHttpClient::WaitForTurn(bool mutating) {
  int64_t wait = 0;
  {
    std::lock_guard lock(state_mu_);
    wait = std::max<int64_t>(0, blocked_until_unix_ms_ - clock_.NowUnixMs());
    if (mutating && last_mutation_steady_ms_ >= 0) {
      int64_t since = clock_.SteadyMs() - last_mutation_steady_ms_;
      wait = std::max(wait, options_.mutating_spacing_ms - since);
    }
  }
  if (wait > 0) sleeper_.SleepMs(std::min(wait, options_.max_wait_ms));
}

void RetryingHttpClient::RecordOutcome(const Result<HttpResponse>& outcome, bool mutating) {
  std::lock_guard lock(state_mu_);
  if (mutating) last_mutation_steady_ms_ = clock_.SteadyMs();
  if (!outcome.ok()) return;
  int64_t now = clock_.NowUnixMs();
  int64_t wait = ExhaustionWaitMs(outcome.value(), now, options_);
  if (IsRateLimited(outcome.value())) wait = HintedWaitMs(outcome.value(), now, options_);
  if (wait > 0) blocked_until_unix_ms_ = std::max(blocked_until_unix_ms_, now + wait);
}

Result<HttpResponse> RetryingHttpClient::Send(const HttpRequest& request, Idempotency idempotency) {
  bool mutating = IsMutatingMethod(request.method);
  int rate_limit_hits = 0;
  for (int attempt = 1;; ++attempt) {
    Result<HttpResponse> outcome = Status::Internal("not sent");
    {
      std::unique_lock<std::mutex> turn(mutating_mu_, std::defer_lock);
      if (mutating) turn.lock();
      WaitForTurn(mutating);
      outcome = inner_.Send(request);
      RecordOutcome(outcome, mutating);
    }
    RetryDecision d =
        DecideRetry(outcome, attempt, rate_limit_hits, idempotency, clock_.NowUnixMs(), options_);
    if (!d.retry) return outcome;
    if (outcome.ok() && IsRateLimited(outcome.value()) &&
        HintedWaitMs(outcome.value(), clock_.NowUnixMs(), options_) < 0) {
      ++rate_limit_hits;
    }
    log::Warn(log::Redact(request.method + " " + UrlForLog(request.url) + ": " + d.reason +
                          "; retrying in " + std::to_string(d.wait_ms) + " ms (attempt " +
                          std::to_string(attempt + 1) + "/" +
                          std::to_string(options_.max_attempts) + ")"));
    sleeper_.SleepMs(d.wait_ms);
  }
}

}  // namespace farm::httpc
