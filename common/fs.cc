#include "common/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace farm::fs {
namespace {

Status ErrnoStatus(const std::string& what, const std::string& path) {
  int err = errno;
  std::string msg = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  if (err == EACCES || err == EPERM) return Status::PermissionDenied(msg);
  return Status::Internal(msg);
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("cannot open", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoStatus("cannot read", path);
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& data, int mode) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus("cannot create", tmp);
  ::fchmod(fd, mode);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoStatus("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Status s = ErrnoStatus("cannot flush", tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus("cannot rename onto", path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& path, int mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Internal("cannot create directory " + path + ": " + ec.message());
  ::chmod(path.c_str(), mode);
  return Status::Ok();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::Internal("cannot remove " + path + ": " + ec.message());
  return Status::Ok();
}

Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp && *tmp ? tmp : "/tmp";
  }
  FARM_RETURN_IF_ERROR(MakeDirs(base));
  std::string templ = base + "/" + prefix + "XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return ErrnoStatus("cannot create temp dir", templ);
  return templ;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string HumanBytes(int64_t n) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  if (n >= (1LL << 30)) {
    o << static_cast<double>(n >> 20) / 1024.0 << " GiB";
  } else if (n >= (1 << 20)) {
    o << static_cast<double>(n >> 10) / 1024.0 << " MiB";
  } else {
    o << n << " B";
  }
  return o.str();
}

}  // namespace farm::fs
