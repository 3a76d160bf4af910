#include "worker/env/cache_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/fs.h"
#include "common/sha256.h"
#include "worker/env/failure.h"
#include "worker/env/tree_ops.h"

namespace farm::env {
namespace {

constexpr char kMarker[] = ".farm-entry";
const char* const kKinds[] = {kDownloads, kPythons, kToolkits, kEnvs};

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 200 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

Result<std::vector<std::string>> Names(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "cannot open directory", dir);
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

Status SetMtime(const std::string& path, int64_t unix_ms) {
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = unix_ms / 1000;
  times[0].tv_nsec = times[1].tv_nsec = (unix_ms % 1000) * 1'000'000;
  if (utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) {
    return ErrnoStatus(errno, "cannot touch", path);
  }
  return Status::Ok();
}

}  // namespace

CachePin& CachePin::operator=(CachePin&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

CachePin::~CachePin() {
  if (fd_ >= 0) close(fd_);  // closing the descriptor releases its flock
}

Result<std::unique_ptr<CacheStore>> CacheStore::Open(const std::string& root, const Clock* clock) {
  std::unique_ptr<CacheStore> store(new CacheStore(root, clock));
  for (const char* sub : {"tmp", "locks"}) FARM_RETURN_IF_ERROR(fs::MakeDirs(root + "/" + sub));
  for (const char* kind : kKinds) FARM_RETURN_IF_ERROR(fs::MakeDirs(root + "/" + kind));
  FARM_RETURN_IF_ERROR(store->Sweep());
  return store;
}

Status CacheStore::Sweep() {
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> leftovers, Names(root_ + "/tmp"));
  for (const std::string& name : leftovers) {
    FARM_RETURN_IF_ERROR(fs::RemoveAll(root_ + "/tmp/" + name));
  }
  for (const char* kind : kKinds) {
    FARM_ASSIGN_OR_RETURN(std::vector<std::string> keys, Names(root_ + "/" + kind));
    for (const std::string& key : keys) {
      std::string path = root_ + "/" + kind + "/" + key;
      if (!fs::Exists(path + "/" + kMarker)) FARM_RETURN_IF_ERROR(fs::RemoveAll(path));
    }
  }
  return Status::Ok();
}

std::string CacheStore::EntryPath(const std::string& kind, const std::string& key) const {
  return root_ + "/" + kind + "/" + key;
}

std::string CacheStore::LockPath(const std::string& kind, const std::string& key) const {
  return root_ + "/locks/" + kind + "-" + key + ".lock";
}

bool CacheStore::IsComplete(const std::string& kind, const std::string& key) const {
  return ValidName(kind) && ValidName(key) && fs::Exists(EntryPath(kind, key) + "/" + kMarker);
}

Result<CachePin> CacheStore::Pin(const std::string& kind, const std::string& key) {
  if (!ValidName(kind) || !ValidName(key)) {
    return Status::InvalidArgument("bad cache entry name " + kind + "/" + key);
  }
  std::string path = LockPath(kind, key);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  while (flock(fd, LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    close(fd);
    return ErrnoStatus(err, "cannot lock", path);
  }
  return CachePin(fd);
}

Status CacheStore::Discard(const std::string& kind, const std::string& key) {
  if (!ValidName(kind) || !ValidName(key)) {
    return Status::InvalidArgument("bad cache entry name " + kind + "/" + key);
  }
  FARM_ASSIGN_OR_RETURN(std::string grave, MakeScratch("discard-"));
  std::string path = EntryPath(kind, key);
  Status s;
  if (rename(path.c_str(), (grave + "/entry").c_str()) != 0 && errno != ENOENT) {
    s = ErrnoStatus(errno, "cannot discard", path);
  }
  (void)fs::RemoveAll(grave);
  return s;
}

Result<std::string> CacheStore::MakeScratch(const std::string& prefix) {
  return fs::MakeTempDir(root_ + "/tmp", prefix);
}

Result<std::string> CacheStore::Ensure(const std::string& kind, const std::string& key,
                                       const BuildFn& build, bool* built) {
  if (built != nullptr) *built = false;
  if (!ValidName(kind) || !ValidName(key)) {
    return Status::InvalidArgument("bad cache entry name " + kind + "/" + key);
  }
  std::string final_path = EntryPath(kind, key);
  if (IsComplete(kind, key)) {
    FARM_RETURN_IF_ERROR(Touch(kind, key));
    return final_path;
  }
  FARM_ASSIGN_OR_RETURN(std::string dir,
                        MakeScratch(std::string(kind) + "-" + key.substr(0, 16) + "-"));
  auto discard = [&](Status s) {
    (void)fs::RemoveAll(dir);
    return s;
  };
  Status s = build(dir);
  if (!s.ok()) return discard(s);
  Result<TreeSize> size = MeasureTree(dir);
  if (!size.ok()) return discard(size.status());
  s = fs::WriteFileAtomic(dir + "/" + kMarker, "bytes=" + std::to_string(size->bytes) + "\n");
  if (!s.ok()) return discard(s);
  s = SetMtime(dir + "/" + kMarker, clock_->NowUnixMs());
  if (!s.ok()) return discard(s);
  if (rename(dir.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    if ((err == ENOTEMPTY || err == EEXIST) && IsComplete(kind, key)) {
      (void)fs::RemoveAll(dir);  // another builder finished first: keep theirs
      return final_path;
    }
    return discard(ErrnoStatus(err, "cannot move into place", final_path));
  }
  if (built != nullptr) *built = true;
  return final_path;
}

Status CacheStore::Touch(const std::string& kind, const std::string& key) {
  return SetMtime(EntryPath(kind, key) + "/" + kMarker, clock_->NowUnixMs());
}

Result<std::vector<CacheEntry>> CacheStore::List() const {
  std::vector<CacheEntry> entries;
  for (const char* kind : kKinds) {
    FARM_ASSIGN_OR_RETURN(std::vector<std::string> keys, Names(root_ + "/" + kind));
    for (const std::string& key : keys) {
      CacheEntry e{kind, key, EntryPath(kind, key)};
      std::string marker = e.path + "/" + kMarker;
      Result<std::string> text = fs::ReadFile(marker);
      struct stat st;
      if (!text.ok() || stat(marker.c_str(), &st) != 0) continue;  // being removed
      if (text->rfind("bytes=", 0) == 0) e.bytes = std::atoll(text->c_str() + 6);
      e.last_used_unix_ms = int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
      entries.push_back(std::move(e));
    }
  }
  return entries;
}

Result<int64_t> CacheStore::Trim(int64_t max_bytes) {
  FARM_ASSIGN_OR_RETURN(std::vector<CacheEntry> entries, List());
  int64_t total = 0;
  for (const CacheEntry& e : entries) total += e.bytes;
  std::sort(entries.begin(), entries.end(), [](const CacheEntry& a, const CacheEntry& b) {
    return a.last_used_unix_ms < b.last_used_unix_ms;
  });
  int64_t freed = 0;
  for (const CacheEntry& e : entries) {
    if (total <= max_bytes) break;
    std::string lock = LockPath(e.kind, e.key);
    int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus(errno, "cannot open", lock);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {  // pinned: in use
      close(fd);
      continue;
    }
    Result<std::string> grave = MakeScratch("evict-");
    Status s = grave.status();
    if (s.ok() && rename(e.path.c_str(), (*grave + "/entry").c_str()) != 0) {
      s = ErrnoStatus(errno, "cannot evict", e.path);
    }
    close(fd);
    if (grave.ok()) (void)fs::RemoveAll(*grave);
    if (!s.ok()) return s;
    total -= e.bytes;
    freed += e.bytes;
  }
  return freed;
}

}  // namespace farm::env
