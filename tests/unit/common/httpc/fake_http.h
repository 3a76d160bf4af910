// Test doubles for code that talks HTTP through httpc::HttpClient: a scripted
// FakeHttpClient and sleepers that record the waits asked for.
#ifndef FARM_TESTS_UNIT_COMMON_HTTPC_FAKE_HTTP_H_
#define FARM_TESTS_UNIT_COMMON_HTTPC_FAKE_HTTP_H_

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/httpc/http_client.h"
#include "common/httpc/retrying_http_client.h"
#include "tests/support/test_util.h"

namespace farm::httpc::testing {

HttpResponse MakeResponse(int status, std::string body = "",
                          std::vector<std::pair<std::string, std::string>> headers = {});

// Answers from a queue of scripted outcomes (then from `fallback`), recording every
// request with the fake clock's time.
class FakeHttpClient final : public HttpClient {
 public:
  explicit FakeHttpClient(const Clock* clock = nullptr) : clock_(clock) {}
  void Push(Result<HttpResponse> outcome);
  void SetFallback(std::function<Result<HttpResponse>(const HttpRequest&)> fallback);
  Result<HttpResponse> Send(const HttpRequest& request) override;
  std::vector<HttpRequest> requests() const;
  std::vector<int64_t> send_times() const;

 private:
  const Clock* clock_;
  mutable std::mutex mu_;
  std::deque<Result<HttpResponse>> queue_;
  std::function<Result<HttpResponse>(const HttpRequest&)> fallback_;
  std::vector<HttpRequest> requests_;
  std::vector<int64_t> send_times_;
};

// Records each wait and advances the fake clock by it; never blocks.
class FakeSleeper final : public Sleeper {
 public:
  explicit FakeSleeper(farm::testing::FakeClock& clock) : clock_(clock) {}
  void SleepMs(int64_t ms) override;
  std::vector<int64_t> sleeps() const;

 private:
  farm::testing::FakeClock& clock_;
  mutable std::mutex mu_;
  std::vector<int64_t> sleeps_;
};

// Records each wait but sleeps at most `cap_ms` of it for real, so tests against the
// real fakes can assert a 60 s backoff was asked for without waiting a minute. As a
// Clock it reads real time plus every wait it skipped, so time seems to have passed.
class RecordingSleeper final : public Sleeper, public Clock {
 public:
  explicit RecordingSleeper(int64_t cap_ms) : cap_ms_(cap_ms) {}
  void SleepMs(int64_t ms) override;
  int64_t NowUnixMs() const override;
  int64_t SteadyMs() const override;
  std::vector<int64_t> sleeps() const;

 private:
  const int64_t cap_ms_;
  mutable std::mutex mu_;
  std::vector<int64_t> sleeps_;
  int64_t skipped_ms_ = 0;  // guarded by mu_
};

}  // namespace farm::httpc::testing

#endif  // FARM_TESTS_UNIT_COMMON_HTTPC_FAKE_HTTP_H_
