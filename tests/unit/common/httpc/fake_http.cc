#include "tests/unit/common/httpc/fake_http.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace farm::httpc::testing {

HttpResponse MakeResponse(int status, std::string body,
                          std::vector<std::pair<std::string, std::string>> headers) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  for (auto& [k, v] : headers) r.headers.Set(k, v);
  return r;
}

void FakeHttpClient::Push(Result<HttpResponse> outcome) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(outcome));
}

void FakeHttpClient::SetFallback(std::function<Result<HttpResponse>(const HttpRequest&)> f) {
  std::lock_guard lock(mu_);
  fallback_ = std::move(f);
}

Result<HttpResponse> FakeHttpClient::Send(const HttpRequest& request) {
  std::lock_guard lock(mu_);
  requests_.push_back(request);
  send_times_.push_back(clock_ ? clock_->SteadyMs() : 0);
  if (!queue_.empty()) {
    Result<HttpResponse> next = std::move(queue_.front());
    queue_.pop_front();
    return next;
  }
  if (fallback_) return fallback_(request);
  return Status::Internal("FakeHttpClient: no scripted response for " + request.url);
}

std::vector<HttpRequest> FakeHttpClient::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::vector<int64_t> FakeHttpClient::send_times() const {
  std::lock_guard lock(mu_);
  return send_times_;
}

void FakeSleeper::SleepMs(int64_t ms) {
  std::lock_guard lock(mu_);
  sleeps_.push_back(ms);
  clock_.Advance(ms);
}

std::vector<int64_t> FakeSleeper::sleeps() const {
  std::lock_guard lock(mu_);
  return sleeps_;
}

void RecordingSleeper::SleepMs(int64_t ms) {
  int64_t real = std::min(ms, cap_ms_);
  {
    std::lock_guard lock(mu_);
    sleeps_.push_back(ms);
    skipped_ms_ += ms - real;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(real));
}

int64_t RecordingSleeper::NowUnixMs() const {
  std::lock_guard lock(mu_);
  return RealClock().NowUnixMs() + skipped_ms_;
}

int64_t RecordingSleeper::SteadyMs() const {
  std::lock_guard lock(mu_);
  return RealClock().SteadyMs() + skipped_ms_;
}

std::vector<int64_t> RecordingSleeper::sleeps() const {
  std::lock_guard lock(mu_);
  return sleeps_;
}

}  // namespace farm::httpc::testing
