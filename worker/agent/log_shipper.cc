#include "worker/agent/log_shipper.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace farm::agent {
namespace {

// Codes after which sending again cannot help: the attempt is no longer this worker's.
bool Permanent(StatusCode code) {
  return code == StatusCode::kPermissionDenied || code == StatusCode::kNotFound ||
         code == StatusCode::kFailedPrecondition || code == StatusCode::kInvalidArgument;
}

}  // namespace

LogShipper::LogShipper(LogSink& sink, const Clock& clock, int64_t job_id, int32_t attempt,
                       LogShipperOptions options)
    : sink_(sink), clock_(clock), job_id_(job_id), attempt_(attempt), options_(options) {}

LogShipper::~LogShipper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t LogShipper::Append(farm::v1::LogStream stream, const std::string& text) {
  std::lock_guard lock(mu_);
  farm::v1::LogLine line;
  line.set_job_id(job_id_);
  line.set_attempt(attempt_);
  line.set_seq(next_seq_++);
  line.set_stream(stream);
  line.set_text(text);
  line.set_time_unix_ms(clock_.NowUnixMs());
  if (dead_) return line.seq();
  if (lines_.empty() || oldest_unsent_ms_ == 0) oldest_unsent_ms_ = clock_.SteadyMs();
  lines_.push_back(std::move(line));
  if (lines_.size() >= options_.batch_lines) cv_.notify_all();
  return next_seq_ - 1;
}

bool LogShipper::Due() const {
  std::lock_guard lock(mu_);
  if (lines_.empty() || dead_) return false;
  int64_t now = clock_.SteadyMs();
  if (now < retry_at_ms_) return false;
  return lines_.size() >= options_.batch_lines || now - oldest_unsent_ms_ >= options_.batch_ms;
}

Status LogShipper::SendOnce() {
  std::lock_guard send_lock(send_mu_);
  std::vector<farm::v1::LogLine> batch;
  {
    std::lock_guard lock(mu_);
    if (dead_) return Status::Ok();
    size_t n = std::min(lines_.size(), options_.max_lines_per_send);
    batch.assign(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(n));
    oldest_unsent_ms_ = 0;
  }
  if (batch.empty()) return Status::Ok();
  Result<int64_t> acked = sink_.Send(job_id_, attempt_, batch);
  std::lock_guard lock(mu_);
  if (!acked.ok()) {
    if (Permanent(acked.status().code())) {
      dead_ = true;
      lines_.clear();
      return acked.status();
    }
    retry_delay_ms_ = retry_delay_ms_ == 0 ? options_.retry_initial_ms
                                           : std::min(retry_delay_ms_ * 2, options_.retry_max_ms);
    retry_at_ms_ = clock_.SteadyMs() + retry_delay_ms_;
    if (oldest_unsent_ms_ == 0) oldest_unsent_ms_ = clock_.SteadyMs() - options_.batch_ms;
    return acked.status();
  }
  retry_delay_ms_ = 0;
  retry_at_ms_ = 0;
  acked_ = std::max(acked_, *acked);
  while (!lines_.empty() && lines_.front().seq() <= acked_) lines_.pop_front();
  // Lines farmd did not take (a gap on its side) are due again at once.
  if (!lines_.empty() && lines_.front().seq() <= batch.back().seq()) {
    oldest_unsent_ms_ = clock_.SteadyMs() - options_.batch_ms;
  } else if (!lines_.empty() && oldest_unsent_ms_ == 0) {
    oldest_unsent_ms_ = clock_.SteadyMs();
  }
  return Status::Ok();
}

void LogShipper::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LogShipper::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stop_; });
      if (stop_) return;
    }
    if (Due()) {
      Status s = SendOnce();
      if (!s.ok()) log::Debug("log upload for job " + std::to_string(job_id_) + ": " + s.ToString());
    }
  }
}

Status LogShipper::Finish(int64_t deadline_ms) {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Status last;
  for (int i = 0; i < 100000 && clock_.SteadyMs() < deadline_ms; ++i) {
    int64_t wait_ms = 0;
    {
      std::lock_guard lock(mu_);
      if (lines_.empty()) return dead_ ? Status::Aborted("farmd refused the log") : Status::Ok();
      wait_ms = std::min(retry_at_ms_, deadline_ms) - clock_.SteadyMs();
    }
    if (wait_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(wait_ms, 100)));
      continue;
    }
    last = SendOnce();
  }
  std::lock_guard lock(mu_);
  if (lines_.empty()) return Status::Ok();
  return Status::Unavailable(std::to_string(lines_.size()) + " log lines not acknowledged" +
                             (last.ok() ? "" : " (" + last.ToString() + ")"));
}

int64_t LogShipper::last_seq() const {
  std::lock_guard lock(mu_);
  return next_seq_ - 1;
}

int64_t LogShipper::acked_seq() const {
  std::lock_guard lock(mu_);
  return acked_;
}

size_t LogShipper::pending() const {
  std::lock_guard lock(mu_);
  return lines_.size();
}

}  // namespace farm::agent
