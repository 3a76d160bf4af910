#include "daemon/store/sql/log_flusher.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace farm::store {

LogFlusher::LogFlusher(std::string path) : path_(std::move(path)) {}

LogFlusher::LogFlusher(std::function<int()> flush) : flush_(std::move(flush)) {}

LogFlusher::~LogFlusher() {
  if (fd_ >= 0) close(fd_);
}

int64_t LogFlusher::Written() {
  std::lock_guard lock(mu_);
  return ++written_;
}

int64_t LogFlusher::written() const {
  std::lock_guard lock(mu_);
  return written_;
}

int64_t LogFlusher::flushes() const {
  std::lock_guard lock(mu_);
  return flushes_;
}

void LogFlusher::WaitFlushed(int64_t ticket) {
  std::unique_lock lock(mu_);
  while (flushed_ < ticket) {
    if (flushing_) {
      flushed_cv_.wait(lock);
      continue;
    }
    // Lead a flush for everything counted so far, this caller's commit included.
    flushing_ = true;
    int64_t target = written_;
    lock.unlock();
    int err = flush_ ? flush_() : FlushFile();
    lock.lock();
    flushing_ = false;
    ++flushes_;
    if (err != 0) {
      log::Error("cannot flush the store's log " + path_ + ": " + std::strerror(err) +
                 "; stopping, since what reached the disk is unknown");
      std::abort();
    }
    if (target > flushed_) flushed_ = target;
    flushed_cv_.notify_all();
  }
}

int LogFlusher::FlushFile() {
  if (path_.empty()) return 0;
  if (fd_ < 0) {
    // Only the leader flushes, so fd_ is set by one thread at a time (mu_ orders it).
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return errno;
  }
  return fdatasync(fd_) == 0 ? 0 : errno;
}

}  // namespace farm::store
