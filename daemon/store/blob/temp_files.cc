#include "daemon/store/blob/temp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace farm::store {
namespace {

constexpr char kHiddenSuffix[] = ".new";
constexpr int kMaxEntries = 1'000'000;  // a bound on one sweep

bool IsHidden(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && name.ends_with(kHiddenSuffix);
}

std::string SystemError(const std::string& what) { return what + ": " + std::strerror(errno); }

// Removes the file when its writer is gone, that is when its lock can be taken; the lock
// is held until after the unlink. False when a writer holds it, or the file system has no
// locks to tell by.
bool RemoveIfWriterGone(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  bool removed = ::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

}  // namespace

Result<LockedFile> CreateLockedFile(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string hidden = dir + "/." + name + kHiddenSuffix;
  int fd = ::open(hidden.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Internal(SystemError("cannot create " + hidden));
  // A file system without locks (EOPNOTSUPP, ENOLCK) leaves the file to the age rule.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno != EOPNOTSUPP && errno != ENOLCK) {
    Status st = Status::Internal(SystemError("cannot lock " + hidden));
    ::close(fd);
    ::unlink(hidden.c_str());
    return st;
  }
  // A link, not a rename, so that an existing `path` is refused rather than replaced.
  LockedFile out;
  out.lock_fd = ::dup(fd);
  if (out.lock_fd < 0 || ::link(hidden.c_str(), path.c_str()) != 0) {
    Status st = Status::Internal(SystemError("cannot create " + path));
    if (out.lock_fd >= 0) ::close(out.lock_fd);
    ::close(fd);
    ::unlink(hidden.c_str());
    return st;
  }
  ::unlink(hidden.c_str());
  out.file = ::fdopen(fd, "wb");
  if (out.file == nullptr) {
    Status st = Status::Internal(SystemError("cannot open " + path));
    ::close(fd);
    ::close(out.lock_fd);
    ::unlink(path.c_str());
    return st;
  }
  return out;
}

Result<SweepCounts> SweepTempDir(const std::string& dir,
                                 const std::function<bool(const std::string&)>& is_temp,
                                 int64_t now_unix_s, int64_t max_age_s) {
  SweepCounts counts;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) {
    if (errno == ENOENT) return counts;
    return Status::Internal(SystemError("cannot read " + dir));
  }
  for (int i = 0; i < kMaxEntries; ++i) {
    errno = 0;
    dirent* e = ::readdir(d.get());
    if (e == nullptr) break;
    std::string name = e->d_name;
    if (name == "." || name == ".." || !is_temp(name)) continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    bool old = now_unix_s - static_cast<int64_t>(st.st_mtime) > max_age_s;
    bool removed = old ? ::unlink(path.c_str()) == 0 : !IsHidden(name) && RemoveIfWriterGone(path);
    if (removed) {
      ++counts.files;
      counts.bytes += static_cast<int64_t>(st.st_size);
    }
  }
  return counts;
}

}  // namespace farm::store
