#include "worker/exec/untrusted_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace farm::agent {
namespace {

constexpr size_t kCopyBuffer = 1 << 20;

std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

Status NotRegular(const std::string& rel, mode_t mode) {
  return Status::FailedPrecondition(rel + " is " + KindOf(mode) +
                                    "; the worker reads only regular files inside the workspace");
}

Status OpenError(const std::string& rel, const std::string& component, int err) {
  if (err == ENOENT) return Status::NotFound(rel + " does not exist");
  if (err == ELOOP) {
    return Status::FailedPrecondition(
        rel + (component == rel ? "" : " (at " + component + ")") +
        " is a symbolic link; the worker follows no link out of the workspace");
  }
  if (err == ENOTDIR) {
    return Status::FailedPrecondition(component + " on the way to " + rel + " is not a directory");
  }
  return Status::Internal("cannot open " + rel + ": " + std::strerror(err));
}

Status CheckFile(const std::string& rel, const struct stat& st, dev_t dev) {
  if (!S_ISREG(st.st_mode)) return NotRegular(rel, st.st_mode);
  if (st.st_dev != dev) {
    return Status::FailedPrecondition(rel + " lies on another file system than the workspace");
  }
  if (st.st_nlink > 1) {
    return Status::FailedPrecondition(
        rel + " has " + std::to_string(st.st_nlink) +
        " hard links; the worker reads only files of the workspace's own");
  }
  return Status::Ok();
}

Status WriteAll(int fd, const char* data, size_t size, const std::string& dest) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Internal("writing " + dest + ": " + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<std::string>> SplitRelative(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') {
    return Status::InvalidArgument("\"" + rel + "\" is not a relative path");
  }
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    if (slash == std::string::npos) slash = rel.size();
    std::string part = rel.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") {
      return Status::InvalidArgument("\"" + rel + "\" has an empty, . or .. component");
    }
    parts.push_back(std::move(part));
    start = slash + 1;
  }
  return parts;
}

Result<UntrustedDir> UntrustedDir::Open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    struct stat st;
    if (err == ENOTDIR && ::lstat(root.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) err = ELOOP;
    return OpenError(root, root, err);
  }
  UniqueFd owned(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Internal("stat " + root + ": " + std::strerror(errno));
  return UntrustedDir(root, std::move(owned), st.st_dev);
}

Result<UniqueFd> UntrustedDir::OpenDir(const std::string& rel) const {
  UniqueFd dir(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (dir.get() < 0) return Status::Internal(std::string("dup: ") + std::strerror(errno));
  if (rel.empty()) return dir;
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitRelative(rel));
  std::string walked;
  for (const std::string& part : parts) {
    walked += (walked.empty() ? "" : "/") + part;
    int next = ::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      int err = errno;
      struct stat st;
      // O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR on some kernels: name the link.
      if (err == ENOTDIR && ::fstatat(dir.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        err = ELOOP;
      }
      return OpenError(rel, walked, err);
    }
    dir = UniqueFd(next);
    struct stat st;
    if (::fstat(dir.get(), &st) != 0 || st.st_dev != dev_) {
      return Status::FailedPrecondition(walked + " lies on another file system than the workspace");
    }
  }
  return dir;
}

Result<UniqueFd> UntrustedDir::OpenFile(const std::string& rel) const {
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitRelative(rel));
  std::string dir_rel = rel.substr(0, rel.size() - parts.back().size());
  if (!dir_rel.empty()) dir_rel.pop_back();
  FARM_ASSIGN_OR_RETURN(UniqueFd dir, OpenDir(dir_rel));
  // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a terminal device
  // must not become the worker's.
  int fd = ::openat(dir.get(), parts.back().c_str(),
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return OpenError(rel, rel, errno);
  UniqueFd file(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Internal("stat " + rel + ": " + std::strerror(errno));
  FARM_RETURN_IF_ERROR(CheckFile(rel, st, dev_));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

Result<std::string> UntrustedDir::ReadFile(const std::string& rel, int64_t max_bytes) const {
  FARM_ASSIGN_OR_RETURN(UniqueFd fd, OpenFile(rel));
  std::string out;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal("reading " + rel + ": " + std::strerror(errno));
    if (n == 0) break;
    if (static_cast<int64_t>(out.size()) + n > max_bytes) {
      return Status::FailedPrecondition(rel + " holds more than " + std::to_string(max_bytes) +
                                        " bytes");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::vector<UntrustedFile>> UntrustedDir::ListFiles(const std::string& rel_dir,
                                                           const std::string& suffix) const {
  FARM_ASSIGN_OR_RETURN(UniqueFd dir, OpenDir(rel_dir));
  int listed = ::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0);
  DIR* d = listed < 0 ? nullptr : ::fdopendir(listed);
  if (d == nullptr) {
    if (listed >= 0) ::close(listed);
    return Status::Internal("listing " + rel_dir + ": " + std::strerror(errno));
  }
  std::vector<UntrustedFile> files;
  Status status = Status::Ok();
  size_t seen = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > 1'000'000) {
      status = Status::FailedPrecondition(rel_dir + " holds more than a million entries");
      break;
    }
    if (name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    struct stat st;
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    status = CheckFile(rel_dir + "/" + name, st, dev_);
    if (!status.ok()) break;
    files.push_back({name, static_cast<int64_t>(st.st_size), st.st_dev, st.st_ino});
  }
  ::closedir(d);
  FARM_RETURN_IF_ERROR(status);
  std::sort(files.begin(), files.end(),
            [](const UntrustedFile& a, const UntrustedFile& b) { return a.name < b.name; });
  return files;
}

Result<int64_t> UntrustedDir::CopyOut(const std::string& rel_dir, const UntrustedFile& file,
                                      const std::string& dest, int64_t max_bytes) const {
  const std::string rel = rel_dir + "/" + file.name;
  FARM_ASSIGN_OR_RETURN(UniqueFd in, OpenFile(rel));
  struct stat st;
  if (::fstat(in.get(), &st) != 0)
    return Status::Internal("stat " + rel + ": " + std::strerror(errno));
  if (st.st_dev != file.dev || st.st_ino != file.ino) {
    return Status::FailedPrecondition(rel + " was replaced after it was listed");
  }
  if (st.st_size > max_bytes) {
    return Status::FailedPrecondition(rel + " has " + std::to_string(st.st_size) +
                                      " bytes, more than the worker takes (" +
                                      std::to_string(max_bytes) + ")");
  }
  UniqueFd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (out.get() < 0) return Status::Internal("creating " + dest + ": " + std::strerror(errno));
  std::vector<char> buf(kCopyBuffer);
  int64_t copied = 0;
  Status status = Status::Ok();
  for (;;) {
    ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Status::Internal("reading " + rel + ": " + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    copied += n;
    if (copied > max_bytes) {
      status =
          Status::FailedPrecondition(rel + " grew past " + std::to_string(max_bytes) + " bytes");
      break;
    }
    status = WriteAll(out.get(), buf.data(), static_cast<size_t>(n), dest);
    if (!status.ok()) break;
  }
  if (!status.ok()) {
    ::unlink(dest.c_str());
    return status;
  }
  return copied;
}

Result<std::vector<std::string>> CopyOutFiles(const std::string& workspace,
                                              const std::string& rel_dir, const std::string& suffix,
                                              const std::string& out_dir, int64_t max_bytes) {
  FARM_ASSIGN_OR_RETURN(UntrustedDir ws, UntrustedDir::Open(workspace));
  FARM_ASSIGN_OR_RETURN(std::vector<UntrustedFile> files, ws.ListFiles(rel_dir, suffix));
  FARM_RETURN_IF_ERROR(fs::RemoveAll(out_dir));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(out_dir, 0755));
  std::vector<std::string> copies;
  for (const UntrustedFile& file : files) {
    std::string dest = out_dir + "/" + file.name;
    FARM_RETURN_IF_ERROR(ws.CopyOut(rel_dir, file, dest, max_bytes).status());
    copies.push_back(std::move(dest));
  }
  return copies;
}

Result<std::string> MakeFreshDir(const std::string& workspace, const std::string& name) {
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitRelative(name));
  if (parts.size() != 1) return Status::InvalidArgument("\"" + name + "\" is not one name");
  const std::string path = workspace + "/" + name;
  // remove_all takes a link itself away, never what it points to.
  FARM_RETURN_IF_ERROR(fs::RemoveAll(path));
  if (::mkdir(path.c_str(), 0755) != 0) {
    return Status::Internal("creating " + path + ": " + std::strerror(errno));
  }
  return path;
}

}  // namespace farm::agent
