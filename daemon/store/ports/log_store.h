// LogStore: the log lines of each job attempt, stored in order without gaps and bounded
// in size, and read back from any point.
#ifndef FARM_DAEMON_STORE_PORTS_LOG_STORE_H_
#define FARM_DAEMON_STORE_PORTS_LOG_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// farm.v1.LogStream values the store writes itself.
inline constexpr int kLogStreamSystem = 3;
inline constexpr int64_t kNoLogLimit = INT64_MAX;

struct LogLineRow {
  int64_t seq = 0;
  int stream = 0;
  std::string text;
  int64_t time_ms = 0;
};

class LogStore {
 public:
  virtual ~LogStore() = default;

  // Stores lines in seq order for the job's attempt, ignoring seqs already stored and
  // stopping at the first gap. Returns the highest seq stored without a gap.
  // Once the attempt's stored text would pass `max_bytes`, the line that crosses it is
  // replaced by one kLogStreamSystem line saying the log was truncated, and later lines are
  // acknowledged without being stored: a build printing gigabytes costs the database
  // `max_bytes`, and its worker's shipper is not held back. The worker's own
  // kLogStreamSystem lines are still stored, up to a reserve of 256 KiB past the limit.
  virtual Result<int64_t> AppendLogLines(int64_t job_id, int attempt,
                                         const std::vector<LogLineRow>& lines,
                                         int64_t max_bytes) = 0;
  Result<int64_t> AppendLogLines(int64_t job_id, int attempt,
                                 const std::vector<LogLineRow>& lines) {
    return AppendLogLines(job_id, attempt, lines, kNoLogLimit);
  }
  virtual Result<std::vector<LogLineRow>> GetLogLines(int64_t job_id, int attempt,
                                                      int64_t after_seq, int limit) = 0;
  virtual Result<int64_t> LastLogSeq(int64_t job_id, int attempt) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_LOG_STORE_H_
