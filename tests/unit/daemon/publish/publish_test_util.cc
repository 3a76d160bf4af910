#include "tests/unit/daemon/publish/publish_test_util.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <random>

#include "common/fs.h"
#include "common/httpc/curl_http_client.h"

#ifndef FARM_SOURCE_DIR
#error "FARM_SOURCE_DIR must name the repository root"
#endif

namespace farm::publish::testing {

LogCapture::LogCapture() : stream_(std::make_shared<std::ostringstream>()) {
  previous_ = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*stream_);
  auto logger = std::make_shared<spdlog::logger>("publish-test-capture", sink);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

LogCapture::~LogCapture() {
  spdlog::set_default_logger(std::static_pointer_cast<spdlog::logger>(previous_));
}

std::string LogCapture::text() const {
  spdlog::default_logger()->flush();
  return stream_->str();
}

FakeServerProcess::FakeServerProcess(const std::string& script, std::vector<std::string> args) {
  std::string ready = dir_.path() + "/ready";
  ProcessSpec spec;
  spec.argv = {"python3", std::string(FARM_SOURCE_DIR) + "/tests/fakes/" + script, "--ready-file",
               ready};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  auto started = runner_.Start(spec);
  if (!started.ok()) {
    ADD_FAILURE() << "cannot start " << script << ": " << started.status().ToString();
    return;
  }
  process_ = std::move(started).value();
  waiter_ = std::thread([this] {
    process_->Wait(
        [this](OutputStream, const std::string& line) {
          std::lock_guard lock(mu_);
          stderr_ += line + "\n";
        },
        0);
  });
  // Bounded: the fake binds in well under a second; give a loaded machine 15 s.
  for (int i = 0; i < 750 && base_url_.empty(); ++i) {
    std::string text = ReadAll(ready);
    if (!text.empty() && text.back() == '\n') base_url_ = text.substr(0, text.size() - 1);
    if (base_url_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (base_url_.empty()) {
    std::lock_guard lock(mu_);
    ADD_FAILURE() << script << " did not write its ready file; stderr:\n" << stderr_;
  }
}

FakeServerProcess::~FakeServerProcess() {
  if (process_) process_->Kill(500);
  if (waiter_.joinable()) waiter_.join();
}

void FakeServerProcess::FailNext(const std::string& fault_json) {
  httpc::CurlHttpClient http;
  httpc::HttpRequest r;
  r.method = "POST";
  r.url = base_url_ + "/_control/fail-next";
  r.body = fault_json;
  auto resp = http.Send(r);
  ASSERT_TRUE(resp.ok() && resp.value().status == 200) << "fail-next refused: " << fault_json;
}

int64_t FakeServerProcess::Counter(const std::string& name) {
  boost::json::value v = nullptr;
  httpc::CurlHttpClient http;
  httpc::HttpRequest r;
  r.url = base_url_ + "/_control/counters";
  auto resp = http.Send(r);
  if (!resp.ok()) return -1;
  boost::system::error_code ec;
  v = boost::json::parse(resp.value().body, ec);
  if (ec || !v.is_object()) return -1;
  auto it = v.as_object().find(name);
  return it == v.as_object().end() ? 0 : it->value().as_int64();
}

boost::json::value FakeServerProcess::State() {
  httpc::CurlHttpClient http;
  httpc::HttpRequest r;
  r.url = base_url_ + "/_control/state";
  auto resp = http.Send(r);
  if (!resp.ok()) return nullptr;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(resp.value().body, ec);
  return ec ? boost::json::value(nullptr) : v;
}

std::string ReadAll(const std::string& path) {
  auto data = fs::ReadFile(path);
  return data.ok() ? data.value() : "";
}

std::string WriteWheel(const std::string& dir, const std::string& name, size_t size,
                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::string data = "PK\x03\x04";
  data.resize(std::max<size_t>(size, 4));
  for (size_t i = 4; i < data.size(); ++i) data[i] = static_cast<char>(rng() & 0xff);
  data.resize(size);
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << data;
  return path;
}

}  // namespace farm::publish::testing
