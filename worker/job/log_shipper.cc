#include "worker/job/log_shipper.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "common/utf8.h"

namespace farm::agent {
namespace {

// Codes after which sending again cannot help: the attempt is no longer this worker's.
bool Permanent(StatusCode code) {
  return code == StatusCode::kPermissionDenied || code == StatusCode::kNotFound ||
         code == StatusCode::kFailedPrecondition || code == StatusCode::kInvalidArgument;
}

size_t Cost(const farm::v1::LogLine& line) { return line.text().size() + kLogLineOverheadBytes; }

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
  // A build may print any bytes; a proto3 string with one invalid byte fails the whole
  // ShipLogs message at farmd, and the shipper would resend it forever.
  line.set_text(ToValidUtf8(text));
  line.set_time_unix_ms(clock_.NowUnixMs());
  if (dead_) {
    if (options_.published_seq != nullptr) options_.published_seq->store(line.seq());
    return line.seq();
  }
  if (lines_.empty() || oldest_unsent_ms_ == 0) oldest_unsent_ms_ = clock_.SteadyMs();
  bytes_ += Cost(line);
  lines_.push_back(std::move(line));
  if (lines_.size() > options_.max_buffered_lines || bytes_ > options_.max_buffered_bytes) {
    TrimLocked();
  }
  if (lines_.size() >= options_.batch_lines) cv_.notify_all();
  // The newest line is never dropped, but may move down.
  if (options_.published_seq != nullptr) options_.published_seq->store(lines_.back().seq());
  return lines_.back().seq();
}

// Lines that must stay as they are: every line handed to the sink (farmd may have stored
// it under its seq) and the oldest unacknowledged ones, up to a quarter of each bound.
size_t LogShipper::ProtectedCountLocked() const {
  size_t n = lines_.size();
  size_t sent = sent_hi_ > acked_ ? std::min(n, static_cast<size_t>(sent_hi_ - acked_)) : 0;
  size_t head = 0;
  size_t head_bytes = 0;
  while (head < n && head < options_.max_buffered_lines / 4 &&
         head_bytes + Cost(lines_[head]) <= options_.max_buffered_bytes / 4) {
    head_bytes += Cost(lines_[head++]);
  }
  return std::max(sent, head);
}

// A batch stays within the protected head (a quarter of each bound), so the lines a
// failed send may have left stored at farmd never grow the part that cannot be dropped.
size_t LogShipper::BatchSizeLocked() const {
  size_t limit =
      std::min(options_.max_lines_per_send, std::max<size_t>(1, options_.max_buffered_lines / 4));
  size_t n = 0;
  size_t bytes = 0;
  while (n < lines_.size() && n < limit) {
    bytes += Cost(lines_[n]);
    if (n > 0 && bytes > options_.max_buffered_bytes / 4) break;
    ++n;
  }
  return n;
}

void LogShipper::TrimLocked() {
  size_t start = ProtectedCountLocked();
  bool merge = false;
  if (marker_seq_ > sent_hi_ && marker_seq_ > acked_) {
    size_t marker = static_cast<size_t>(marker_seq_ - acked_ - 1);
    // The open marker grows while the lines right behind it are the ones to drop.
    if (marker + 1 >= start) {
      start = marker + 1;
      merge = true;
    }
  }
  size_t lines = lines_.size();
  size_t bytes = bytes_;
  size_t end = start;
  // Always keep the newest line; stop at three quarters of both bounds.
  while (end + 1 < lines_.size() && (lines > options_.max_buffered_lines / 4 * 3 ||
                                     bytes > options_.max_buffered_bytes / 4 * 3)) {
    bytes -= Cost(lines_[end++]);
    --lines;
  }
  if (end == start || (!merge && end == start + 1)) return;  // nothing left to drop
  if (!merge) {
    log::Warn("job " + std::to_string(job_id_) + " attempt " + std::to_string(attempt_) +
              ": farmd has not acknowledged " + std::to_string(lines_.size()) +
              " log lines; dropping the oldest after the first ones (a line in the job's "
              "log says how many)");
  }
  DropLocked(start, end, merge);
}

// Replaces lines_[start, end) by the marker (new at `start`, or the one just before it
// when `merge`) and renumbers what follows so seqs stay without gap.
void LogShipper::DropLocked(size_t start, size_t end, bool merge) {
  int64_t text_bytes = 0;
  for (size_t i = start; i < end; ++i) {
    text_bytes += static_cast<int64_t>(lines_[i].text().size());
    bytes_ -= Cost(lines_[i]);
  }
  size_t marker = merge ? start - 1 : start;
  if (merge) {
    bytes_ -= Cost(lines_[marker]);
  } else {
    farm::v1::LogLine line = lines_[start];  // keeps job, attempt and the first drop's time
    line.set_stream(farm::v1::SYSTEM);
    lines_.insert(lines_.begin() + static_cast<std::ptrdiff_t>(start), std::move(line));
    ++start;
    ++end;
    marker_seq_ = acked_ + 1 + static_cast<int64_t>(marker);
    marker_lines_ = 0;
    marker_bytes_ = 0;
  }
  marker_lines_ += static_cast<int64_t>(end - start);
  marker_bytes_ += text_bytes;
  dropped_lines_ += static_cast<int64_t>(end - start);
  lines_[marker].set_text(MarkerText());
  bytes_ += Cost(lines_[marker]);
  lines_.erase(lines_.begin() + static_cast<std::ptrdiff_t>(start),
               lines_.begin() + static_cast<std::ptrdiff_t>(end));
  for (size_t i = start; i < lines_.size(); ++i) {
    lines_[i].set_seq(acked_ + 1 + static_cast<int64_t>(i));
  }
  next_seq_ = acked_ + 1 + static_cast<int64_t>(lines_.size());
}

std::string LogShipper::MarkerText() const {
  return "farm: " + std::to_string(marker_lines_) + " log lines (" + std::to_string(marker_bytes_) +
         " bytes) dropped here: farmd did not acknowledge " + "them and the worker keeps at most " +
         std::to_string(options_.max_buffered_lines) + " lines / " +
         std::to_string(options_.max_buffered_bytes) +
         " bytes for it; the lines before and after this one are complete";
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
    size_t n = BatchSizeLocked();
    batch.assign(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(n));
    oldest_unsent_ms_ = 0;
    if (n > 0) sent_hi_ = std::max(sent_hi_, batch.back().seq());
    if (marker_seq_ != 0 && marker_seq_ <= sent_hi_) marker_seq_ = 0;  // farmd may have it
  }
  if (batch.empty()) return Status::Ok();
  Result<int64_t> acked = sink_.Send(job_id_, attempt_, batch);
  std::lock_guard lock(mu_);
  if (!acked.ok()) {
    if (Permanent(acked.status().code())) {
      dead_ = true;
      lines_.clear();
      bytes_ = 0;
      marker_seq_ = 0;
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
  while (!lines_.empty() && lines_.front().seq() <= acked_) {
    bytes_ -= Cost(lines_.front());
    lines_.pop_front();
  }
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
      if (!s.ok())
        log::Debug("log upload for job " + std::to_string(job_id_) + ": " + s.ToString());
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

size_t LogShipper::buffered_bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

int64_t LogShipper::dropped_lines() const {
  std::lock_guard lock(mu_);
  return dropped_lines_;
}

}  // namespace farm::agent
