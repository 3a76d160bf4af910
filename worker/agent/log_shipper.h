// Shipping a job's log lines to farmd. Lines get seq 1, 2, ... per attempt as they are
// produced and stay buffered until farmd acknowledges them (UploadLogResponse.acked_seq,
// "highest seq stored without gap"). Every send starts at acked_seq + 1, so after a
// broken connection the lines farmd lacks are sent again and farmd, which ignores seqs it
// has, ends with no gap and no duplicate.
//
// LogShipper is thread-safe: the job's output callbacks Append() while its flusher thread
// (Start/Finish) sends. LogSink is the seam to farmd; tests use a fake.
#ifndef FARM_WORKER_AGENT_LOG_SHIPPER_H_
#define FARM_WORKER_AGENT_LOG_SHIPPER_H_

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
  int64_t batch_ms = 200;           // a batch leaves at least this often ...
  size_t batch_lines = 200;         // ... or as soon as this many lines wait
  size_t max_lines_per_send = 2000; // one UploadLog call carries at most this many
  int64_t retry_initial_ms = 500;   // backoff after a failed send, doubling ...
  int64_t retry_max_ms = 10000;     // ... up to this
};

class LogShipper {
 public:
  LogShipper(LogSink& sink, const Clock& clock, int64_t job_id, int32_t attempt,
             LogShipperOptions options = {});
  ~LogShipper();
  LogShipper(const LogShipper&) = delete;
  LogShipper& operator=(const LogShipper&) = delete;

  // Buffers one line and returns its seq.
  int64_t Append(farm::v1::LogStream stream, const std::string& text);

  // True when a batch should leave now (enough lines, or the oldest waited batch_ms),
  // and no retry backoff is pending.
  bool Due() const;

  // Sends up to max_lines_per_send unacknowledged lines, starting at acked_seq + 1.
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

 private:
  void Loop();

  LogSink& sink_;
  const Clock& clock_;
  const int64_t job_id_;
  const int32_t attempt_;
  const LogShipperOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<farm::v1::LogLine> lines_;  // seq > acked_ (guarded by mu_)
  int64_t next_seq_ = 1;                 // guarded by mu_
  int64_t acked_ = 0;                    // guarded by mu_
  int64_t oldest_unsent_ms_ = 0;         // when the first line since the last send came
  int64_t retry_at_ms_ = 0;              // no send before this (backoff)
  int64_t retry_delay_ms_ = 0;
  bool dead_ = false;                    // farmd refused the attempt: drop lines
  bool stop_ = false;
  std::mutex send_mu_;                   // one send at a time
  std::thread thread_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_AGENT_LOG_SHIPPER_H_
