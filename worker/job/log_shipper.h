// Shipping a job's log lines to farmd. Lines get seq 1, 2, ... per attempt as they are
// produced and stay buffered until farmd acknowledges them (UploadLogResponse.acked_seq,
// "highest seq stored without gap"). Every send starts at acked_seq + 1, so after a
// broken connection the lines farmd lacks are sent again and farmd, which ignores seqs it
// has, ends with no gap and no duplicate.
//
// The buffer is bounded (LogShipperOptions::max_buffered_lines / _bytes), so a long farmd
// outage cannot exhaust the worker's memory. When a new line would pass a bound, the
// shipper keeps the oldest unacknowledged lines (up to a quarter of each bound, and every
// line already handed to the sink, which farmd may have stored) and the newest lines, and
// replaces the middle with one SYSTEM line saying how many lines and bytes were dropped
// and why; it drops down to three quarters of the bounds so trimming is rare. Lines not
// yet handed to the sink are renumbered to close the gap, so farmd still sees seqs
// 1, 2, 3, ... without gap: a seq returned by Append for a line that was later dropped or
// moved is not final, last_seq() always is. The newest line is never dropped, so a single
// line larger than a quarter of the byte bound (process output lines are at most 64 KiB)
// can hold the buffer above it until it is acknowledged.
//
// LogShipper is thread-safe: the job's output callbacks Append() while its flusher thread
// (Start/Finish) sends. LogSink is the seam to farmd; tests use a fake.
#ifndef FARM_WORKER_JOB_LOG_SHIPPER_H_
#define FARM_WORKER_JOB_LOG_SHIPPER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::agent {

class LogSink {
 public:
  virtual ~LogSink() = default;
  // Sends lines of one attempt (seq increasing). On success returns farmd's acked_seq.
  virtual Result<int64_t> Send(int64_t job_id, int32_t attempt,
                               const std::vector<farm::v1::LogLine>& lines) = 0;
};

struct LogShipperOptions {
  int64_t batch_ms = 200;            // a batch leaves at least this often ...
  size_t batch_lines = 200;          // ... or as soon as this many lines wait
  size_t max_lines_per_send = 2000;  // one UploadLog call carries at most this many
  int64_t retry_initial_ms = 500;    // backoff after a failed send, doubling ...
  int64_t retry_max_ms = 10000;      // ... up to this
  // Bounds on unacknowledged lines; a line counts its text plus kLogLineOverheadBytes.
  size_t max_buffered_lines = 500000;
  size_t max_buffered_bytes = size_t{64} << 20;
  // When set, every Append stores its line's seq here, for a reader on another thread (the
  // heartbeat); it must outlive the shipper.
  std::atomic<int64_t>* published_seq = nullptr;
};

// What one buffered line costs besides its text (the LogLine message and its strings).
inline constexpr size_t kLogLineOverheadBytes = 128;

class LogShipper {
 public:
  LogShipper(LogSink& sink, const Clock& clock, int64_t job_id, int32_t attempt,
             LogShipperOptions options = {});
  ~LogShipper();
  LogShipper(const LogShipper&) = delete;
  LogShipper& operator=(const LogShipper&) = delete;

  // Buffers one line and returns its seq (see above: final unless trimmed later).
  int64_t Append(farm::v1::LogStream stream, const std::string& text);

  // True when a batch should leave now (enough lines, or the oldest waited batch_ms),
  // and no retry backoff is pending.
  bool Due() const;

  // Sends up to max_lines_per_send unacknowledged lines (and no more than a quarter of
  // the buffer bounds), starting at acked_seq + 1.
  // On success drops what farmd acknowledged; on failure keeps everything and backs off.
  // Returns the sink's status. A permanent refusal (the attempt is no longer ours)
  // drops the buffer and returns that status.
  Status SendOnce();

  // Starts a thread that sends whenever Due().
  void Start();

  // Stops the thread, then keeps sending until everything is acknowledged or the steady
  // clock passes `deadline_ms`. Returns OK when nothing is left unacknowledged.
  Status Finish(int64_t deadline_ms);

  int64_t last_seq() const;
  int64_t acked_seq() const;
  size_t pending() const;
  // Bytes the unacknowledged lines count against max_buffered_bytes.
  size_t buffered_bytes() const;
  // Lines dropped to keep the bounds since the start (markers not counted).
  int64_t dropped_lines() const;

 private:
  void Loop();
  // Drops the oldest droppable lines behind a marker until the buffer is within
  // three quarters of its bounds. Requires mu_.
  void TrimLocked();
  size_t ProtectedCountLocked() const;
  size_t BatchSizeLocked() const;
  void DropLocked(size_t start, size_t end, bool merge);
  std::string MarkerText() const;

  LogSink& sink_;
  const Clock& clock_;
  const int64_t job_id_;
  const int32_t attempt_;
  const LogShipperOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Seqs acked_ + 1, acked_ + 2, ... without gap; everything below is guarded by mu_.
  std::deque<farm::v1::LogLine> lines_;
  size_t bytes_ = 0;  // cost of lines_ (text + overhead)
  int64_t next_seq_ = 1;
  int64_t acked_ = 0;
  int64_t sent_hi_ = 0;       // highest seq handed to the sink: never renumbered
  int64_t marker_seq_ = 0;    // the drop marker not yet sent (0: none)
  int64_t marker_lines_ = 0;  // what that marker stands for
  int64_t marker_bytes_ = 0;
  int64_t dropped_lines_ = 0;
  int64_t oldest_unsent_ms_ = 0;  // when the first line since the last send came
  int64_t retry_at_ms_ = 0;       // no send before this (backoff)
  int64_t retry_delay_ms_ = 0;
  bool dead_ = false;  // farmd refused the attempt: drop lines
  bool stop_ = false;
  std::mutex send_mu_;  // one send at a time
  std::thread thread_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_LOG_SHIPPER_H_
