#include "cli/export/export_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "cli/export/index_links.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace farm::cli::exporter {

namespace {

Status Errno(const std::string& what) {
  return Status::Internal(what + ": " + std::strerror(errno));
}

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("cannot write " + path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// What DIR is now: absent, an empty directory, an export, or something else.
enum class Existing { kAbsent, kEmpty, kExport, kOther };

Result<Existing> Inspect(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return Existing::kAbsent;
    return Status::FailedPrecondition("cannot export into " + dir + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return Status::InvalidArgument(dir + " is a symbolic link: give the directory itself");
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + " exists and is not a directory");
  std::string marker = dir + "/" + kMarkerName;
  if (::lstat(marker.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return Existing::kExport;
  std::error_code ec;
  bool empty = std::filesystem::is_empty(dir, ec);
  if (ec) return Status::FailedPrecondition("cannot read " + dir + ": " + ec.message());
  return empty ? Existing::kEmpty : Existing::kOther;
}

// Removes the siblings ".NAME.export-*" that killed exports left (the lock is held,
// so none is in use).
void RemoveOrphans(const std::string& parent, const std::string& prefix) {
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) return;
  std::vector<std::string> orphans;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.starts_with(prefix)) orphans.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : orphans) (void)fs::RemoveAll(parent + "/" + name);
}

Status SyncDir(const std::string& path) {
  Fd d{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0 || ::fsync(d.fd) != 0) return Errno("cannot sync " + path);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ExportDir>> ExportDir::Open(const std::string& dir_arg, bool force) {
  std::string dir = std::filesystem::path(dir_arg).lexically_normal().string();
  while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  std::filesystem::path p(dir);
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return Status::InvalidArgument("export-index needs a directory name, got " + dir_arg);
  }
  std::unique_ptr<ExportDir> out(new ExportDir());
  out->dir_ = dir;
  out->parent_ = p.has_parent_path() ? p.parent_path().string() : ".";
  FARM_ASSIGN_OR_RETURN(Existing existing, Inspect(dir));
  if (existing == Existing::kOther && !force) {
    return Status::InvalidArgument(
        dir + " exists and is not an export of farmctl export-index (it has no " +
        std::string(kMarkerName) + "): refusing to replace it; --force replaces it");
  }
  out->previous_export_ = existing == Existing::kExport;
  Status made = fs::MakeDirs(out->parent_);
  if (!made.ok()) {
    return Status::FailedPrecondition("cannot create " + out->parent_ + ": " + made.message());
  }
  out->lock_fd_ = ::open(out->parent_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (out->lock_fd_ < 0) {
    return Status::FailedPrecondition("cannot open " + out->parent_ + ": " + std::strerror(errno));
  }
  if (::flock(out->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status::FailedPrecondition("another export into " + out->parent_ +
                                      " is running (it holds the lock on that directory)");
  }
  std::string prefix = "." + name + ".export-";
  RemoveOrphans(out->parent_, prefix);
  auto temp = fs::MakeTempDir(out->parent_, prefix);
  if (!temp.ok()) {
    return Status::FailedPrecondition("cannot write next to " + dir + " (the export is built in " +
                                      out->parent_ +
                                      " and renamed into place): " + temp.status().message());
  }
  out->temp_ = *temp;
  if (::chmod(out->temp_.c_str(), 0755) != 0) return Errno("cannot chmod " + out->temp_);
  return out;
}

ExportDir::~ExportDir() {
  if (!temp_.empty() && !committed_) (void)fs::RemoveAll(temp_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::string> ExportDir::Prepare(const std::string& path) {
  auto safe = SafeExportPath("/" + path);
  if (!safe || safe->empty() || safe->ends_with('/')) {
    return Status::InvalidArgument("refusing to write " + path + ": not a safe file name");
  }
  std::string full = temp_ + "/" + *safe;
  FARM_RETURN_IF_ERROR(fs::MakeDirs(std::filesystem::path(full).parent_path().string()));
  return full;
}

Status ExportDir::Write(const std::string& path, std::string_view data) {
  FARM_ASSIGN_OR_RETURN(std::string full, Prepare(path));
  return WriteNew(full, data);
}

Status ExportDir::WriteNew(const std::string& full, std::string_view data) {
  Fd f{::open(full.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)};
  if (f.fd < 0) return Errno("cannot create " + full);
  return WriteAll(f.fd, data, full);
}

Status ExportDir::WriteVerified(const std::string& path, const std::string& sha256, int64_t size,
                                const Fetcher& fetch) {
  FARM_ASSIGN_OR_RETURN(std::string full, Prepare(path));
  Fd f{::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
  if (f.fd < 0) return Errno("cannot create " + full);
  Sha256 hasher;
  int64_t seen = 0;
  Status fetched = fetch([&](std::string_view block) -> Status {
    seen += static_cast<int64_t>(block.size());
    if (size >= 0 && seen > size) {
      return Status::DataLoss(path + " is larger than the " + std::to_string(size) +
                              " bytes its index page says");
    }
    hasher.Update(block);
    return WriteAll(f.fd, block, full);
  });
  std::string got = fetched.ok() ? hasher.HexDigest() : "";
  if (fetched.ok() && size >= 0 && seen != size) {
    fetched = Status::DataLoss(path + " has " + std::to_string(seen) +
                               " bytes, its index page says " + std::to_string(size));
  }
  if (fetched.ok() && got != sha256) {
    fetched = Status::DataLoss(path + " has sha256 " + got + " but its index page says " + sha256 +
                               ": the bytes farmd served are not the wheel it lists");
  }
  if (!fetched.ok()) {
    ::unlink(full.c_str());
    return fetched;
  }
  return Status::Ok();
}

Result<bool> ExportDir::ReuseFromPrevious(const std::string& path, const std::string& sha256) {
  if (!previous_export_) return false;
  auto safe = SafeExportPath("/" + path);
  if (!safe) return false;
  std::string old = dir_ + "/" + *safe;
  struct stat st;
  if (::lstat(old.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto got = Sha256FileHex(old);
  if (!got.ok() || *got != sha256) return false;
  FARM_ASSIGN_OR_RETURN(std::string full, Prepare(path));
  if (::link(old.c_str(), full.c_str()) == 0) return true;
  // A file system without hard links: copy, and check the copy.
  std::error_code ec;
  std::filesystem::copy_file(old, full, ec);
  if (ec) return Status::Internal("cannot copy " + old + ": " + ec.message());
  auto copied = Sha256FileHex(full);
  if (!copied.ok() || *copied != sha256) {
    ::unlink(full.c_str());
    return false;
  }
  return true;
}

Status ExportDir::Commit(const std::string& marker_json) {
  // The marker's name starts with "." so that no page of the index can name it.
  FARM_RETURN_IF_ERROR(WriteNew(temp_ + "/" + kMarkerName, marker_json));
  // Every byte on disk before the tree becomes DIR: one syncfs for the whole file system.
  {
    Fd d{::open(temp_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (d.fd < 0 || ::syncfs(d.fd) != 0) return Errno("cannot sync " + temp_);
  }
  FARM_ASSIGN_OR_RETURN(Existing existing, Inspect(dir_));
  if (existing == Existing::kAbsent) {
    if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_NOREPLACE) != 0 &&
        (errno != EINVAL || ::rename(temp_.c_str(), dir_.c_str()) != 0)) {
      return Errno("cannot rename " + temp_ + " to " + dir_);
    }
    committed_ = true;
    return SyncDir(parent_);
  }
  if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) return Errno("cannot swap " + temp_ + " with " + dir_);
    // No RENAME_EXCHANGE here: move the old tree aside, then the new one in. Between the
    // two renames DIR is missing for a moment, never half written.
    std::string aside = temp_ + ".old";
    if (::rename(dir_.c_str(), aside.c_str()) != 0) return Errno("cannot move " + dir_ + " aside");
    if (::rename(temp_.c_str(), dir_.c_str()) != 0) {
      Status s = Errno("cannot rename " + temp_ + " to " + dir_);
      (void)::rename(aside.c_str(), dir_.c_str());
      return s;
    }
    committed_ = true;
    (void)fs::RemoveAll(aside);
    return SyncDir(parent_);
  }
  committed_ = true;
  FARM_RETURN_IF_ERROR(SyncDir(parent_));
  // The old export, swapped out. Left behind only if this fails; the next export removes it.
  (void)fs::RemoveAll(temp_);
  return Status::Ok();
}

}  // namespace farm::cli::exporter
