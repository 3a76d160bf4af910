// CacheStore: the worker's provisioning cache on disk, one folder of entries per kind:
//
//   <root>/downloads/<sha256>/blob    verified downloads, content-addressed
//   <root>/python/<key>/...           unpacked interpreters
//   <root>/toolkits/<key>/...         unpacked CUDA toolkits
//   <root>/envs/<key>/...             finished environment snapshots
//   <root>/tmp/                       work in progress (swept at Open)
//   <root>/locks/<kind>-<key>.lock    pins (flock)
//   <root>/installer/pip-<sha256>/    the installer unpacked and compiled, outside the
//                                     store (lock::UnpackPip; a few MiB, never evicted)
//
// Crash safety: an entry is built under tmp/ and renamed into place only once complete,
// with its marker (<entry>/.farm-entry: its size) written before the rename, so an entry
// folder exists complete or not at all. A kill -9 leaves only tmp/ leftovers, which Open
// removes, together with any entry folder that lacks its marker.
//
// Bounded size: Trim evicts whole entries, least recently used first (the marker's
// modification time, set from the Clock on every use), skipping pinned ones. A pin is a
// shared flock on the entry's lock file, held from before the entry is looked up until
// the job is done, so an entry in use is never evicted, by this process or another.
//
// Thread-safe: several threads (jobs) may Ensure, Pin and Trim at once; two builders of
// one entry both build and the second's rename loses (its copy is discarded).
#ifndef FARM_WORKER_ENV_CACHE_STORE_H_
#define FARM_WORKER_ENV_CACHE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace farm::env {

// A held pin; releasing it (destruction) lets Trim evict the entry again.
class CachePin {
 public:
  CachePin() = default;
  explicit CachePin(int fd) : fd_(fd) {}
  CachePin(CachePin&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  CachePin& operator=(CachePin&& other) noexcept;
  CachePin(const CachePin&) = delete;
  CachePin& operator=(const CachePin&) = delete;
  ~CachePin();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct CacheEntry {
  std::string kind;
  std::string key;
  std::string path;
  int64_t bytes = 0;
  int64_t last_used_unix_ms = 0;
};

class CacheStore {
 public:
  // Makes the folders, removes tmp/ leftovers and incomplete entries.
  static Result<std::unique_ptr<CacheStore>> Open(const std::string& root, const Clock* clock);

  const std::string& root() const { return root_; }

  // `kind` and `key` are [A-Za-z0-9._-]+ (keys are digests); anything else is refused.
  std::string EntryPath(const std::string& kind, const std::string& key) const;
  bool IsComplete(const std::string& kind, const std::string& key) const;

  // Pins the entry (present or not yet); blocks only while Trim is removing it.
  Result<CachePin> Pin(const std::string& kind, const std::string& key);

  // Fills a folder for an entry being built; its path is under tmp/.
  using BuildFn = std::function<Status(const std::string& dir)>;

  // Returns the entry's path, building it first when it is not complete. `*built` tells
  // which happened. A failed build leaves nothing behind and returns the build's Status.
  Result<std::string> Ensure(const std::string& kind, const std::string& key, const BuildFn& build,
                             bool* built = nullptr);

  // Marks the entry as just used (LRU order).
  Status Touch(const std::string& kind, const std::string& key);

  // Complete entries, any order.
  Result<std::vector<CacheEntry>> List() const;

  // Evicts unpinned entries, least recently used first, until at most `max_bytes` stay.
  // Returns the bytes freed.
  Result<int64_t> Trim(int64_t max_bytes);

  // Removes a complete entry at once, even while pinned (the caller found it unusable; jobs
  // that cloned it keep their copies).
  Status Discard(const std::string& kind, const std::string& key);

  // A fresh folder under tmp/ for scratch work (removed by the caller, or at next Open).
  Result<std::string> MakeScratch(const std::string& prefix);

 private:
  CacheStore(std::string root, const Clock* clock) : root_(std::move(root)), clock_(clock) {}
  Status Sweep();
  std::string LockPath(const std::string& kind, const std::string& key) const;

  std::string root_;
  const Clock* clock_;
};

// The kinds, as folder names.
inline constexpr char kDownloads[] = "downloads";
inline constexpr char kPythons[] = "python";
inline constexpr char kToolkits[] = "toolkits";
inline constexpr char kEnvs[] = "envs";

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_CACHE_STORE_H_
