// LockStore: the environment locks farmd resolved (common/lock/env_lock.h), by digest. A
// job names the lock its environment installs (JobNeeds.lock_digest); the lease carries
// the lock's text to the worker, and `farmctl lock` reads it back.
#ifndef FARM_DAEMON_STORE_PORTS_LOCK_STORE_H_
#define FARM_DAEMON_STORE_PORTS_LOCK_STORE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace farm::store {

struct LockRow {
  std::string digest;  // sha256 of `text`
  std::string text;    // the pylock.toml
  int64_t packages = 0;
  int64_t bytes = 0;  // the wheels' sizes added up
  int64_t created_ms = 0;
};

class LockStore {
 public:
  virtual ~LockStore() = default;

  // Records the lock. Idempotent: a digest holds one text, so recording it again changes
  // nothing (and keeps the first created_ms).
  virtual Status PutLock(const LockRow& row) = 0;
  // The lock of `digest`; nullopt when none was recorded.
  virtual Result<std::optional<LockRow>> GetLock(const std::string& digest) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_LOCK_STORE_H_
