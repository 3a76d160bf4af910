// LogFlusher: group commit for a write-ahead log file. Writers count their commits with
// Written() once the commit is in the file (in the page cache, which survives a crash of
// the process but not of the machine); WaitFlushed(ticket) returns once a flush that began
// after that commit has finished. Callers that wait together share one fdatasync: the
// first becomes the leader and flushes for all commits counted so far, the others wait on
// it. So commits cost one flush per batch instead of one each, and no lock of the caller's
// needs to be held across the disk.
//
// A failed flush ends the process (std::abort after logging): after fdatasync fails, Linux
// may have dropped the dirty pages and reports the error once, so the log's state on disk
// is unknown and no retry can be trusted (PostgreSQL's fsync lesson). farmd restarts from
// what is on disk, and clients whose calls were not answered ask again.
#ifndef FARM_DAEMON_STORE_SQL_LOG_FLUSHER_H_
#define FARM_DAEMON_STORE_SQL_LOG_FLUSHER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace farm::store {

class LogFlusher {
 public:
  // Flushes the file at `path` (opened on first use); an empty path flushes nothing (an
  // in-memory database).
  explicit LogFlusher(std::string path);
  // For tests: `flush` stands in for fdatasync and returns an errno, 0 on success.
  explicit LogFlusher(std::function<int()> flush);
  ~LogFlusher();
  LogFlusher(const LogFlusher&) = delete;
  LogFlusher& operator=(const LogFlusher&) = delete;

  // Counts one more commit in the file; returns its ticket. Thread-safe.
  int64_t Written();
  // The ticket of the last commit counted.
  int64_t written() const;
  // Blocks until every commit up to `ticket` is flushed. Thread-safe.
  void WaitFlushed(int64_t ticket);
  // Flushes performed so far (for tests and metrics).
  int64_t flushes() const;

 private:
  int FlushFile();

  std::string path_;
  std::function<int()> flush_;
  int fd_ = -1;
  mutable std::mutex mu_;
  std::condition_variable flushed_cv_;
  int64_t written_ = 0;
  int64_t flushed_ = 0;
  int64_t flushes_ = 0;
  bool flushing_ = false;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_LOG_FLUSHER_H_
