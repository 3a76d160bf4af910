// Test doubles for the publishing clients: a scripted FakeHttpClient, sleepers that
// record the waits asked for, a log capture, and FakeServerProcess, which runs one of
// the Python protocol fakes in tests/fakes on 127.0.0.1 for the lifetime of a test.
#ifndef FARM_TESTS_UNIT_DAEMON_PUBLISH_PUBLISH_TEST_UTIL_H_
#define FARM_TESTS_UNIT_DAEMON_PUBLISH_PUBLISH_TEST_UTIL_H_

#include <boost/json.hpp>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/process.h"
#include "daemon/publish/http_client.h"
#include "daemon/publish/retrying_http_client.h"
#include "tests/support/test_util.h"

namespace farm::publish::testing {

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

// Sends every farm::log line to a string for the object's lifetime.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  std::string text() const;

 private:
  std::shared_ptr<std::ostringstream> stream_;
  std::shared_ptr<void> previous_;
};

// Runs `python3 tests/fakes/<script> --ready-file ... <args>` and waits (bounded) for
// its base URL. Kills the process group at destruction.
class FakeServerProcess {
 public:
  FakeServerProcess(const std::string& script, std::vector<std::string> args);
  ~FakeServerProcess();
  // Empty when the server did not come up (the constructor records a test failure).
  const std::string& base_url() const { return base_url_; }
  // POST /_control/fail-next with `fault` (a JSON object).
  void FailNext(const std::string& fault_json);
  // GET /_control/counters[name], 0 when absent.
  int64_t Counter(const std::string& name);
  boost::json::value State();

 private:
  farm::testing::ScopedTempDir dir_;
  RealProcessRunner runner_;
  std::unique_ptr<Process> process_;
  std::thread waiter_;
  std::string base_url_;
  std::string stderr_;
  std::mutex mu_;
};

// Reads a whole file into memory; "" on failure.
std::string ReadAll(const std::string& path);
// Writes `size` deterministic pseudo-random bytes (starting "PK\3\4" like a wheel).
std::string WriteWheel(const std::string& dir, const std::string& name, size_t size,
                       uint32_t seed);

}  // namespace farm::publish::testing

#endif  // FARM_TESTS_UNIT_DAEMON_PUBLISH_PUBLISH_TEST_UTIL_H_
