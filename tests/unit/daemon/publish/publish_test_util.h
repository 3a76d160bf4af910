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

#include "common/httpc/http_client.h"
#include "common/httpc/retrying_http_client.h"
#include "common/process.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/httpc/fake_http.h"

namespace farm::publish::testing {

using httpc::testing::FakeHttpClient;
using httpc::testing::FakeSleeper;
using httpc::testing::MakeResponse;
using httpc::testing::RecordingSleeper;

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
std::string WriteWheel(const std::string& dir, const std::string& name, size_t size, uint32_t seed);

}  // namespace farm::publish::testing

#endif  // FARM_TESTS_UNIT_DAEMON_PUBLISH_PUBLISH_TEST_UTIL_H_
