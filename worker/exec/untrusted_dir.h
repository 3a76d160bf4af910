// UntrustedDir: reading what a build left in its workspace without trusting a byte of it.
// The build (or a validation script) may have replaced any directory or file there with a
// symbolic link to a host path, a FIFO that blocks a reader, a device, or a hard link, and
// the worker runs on the host. So every path is resolved beneath the workspace's directory
// descriptor one component at a time with O_NOFOLLOW (a link anywhere is refused, never
// followed), files are opened O_NONBLOCK and must then be regular files on the workspace's
// own file system (st_dev), and a file listed is the file read (st_dev and st_ino checked
// again on the open descriptor). Reads are bounded in size. Writes never go into the
// directory: outputs are copied out to a place the build cannot reach.
//
// Relative paths are '/'-separated component lists; "", ".", ".." and absolute paths are
// refused. Not thread-safe; one per use.
#ifndef FARM_WORKER_EXEC_UNTRUSTED_DIR_H_
#define FARM_WORKER_EXEC_UNTRUSTED_DIR_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::agent {

// Owns a file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A regular file found by UntrustedDir::ListFiles.
struct UntrustedFile {
  std::string name;  // within the listed directory
  int64_t size = 0;
  dev_t dev = 0;
  ino_t ino = 0;
};

class UntrustedDir {
 public:
  // Opens `root`, a directory the worker made itself (its path is trusted; its contents
  // are not). A symbolic link at `root` is refused too.
  static Result<UntrustedDir> Open(const std::string& root);

  const std::string& path() const { return root_; }

  // Opens the regular file at `rel` for reading. NotFound when nothing is there;
  // FailedPrecondition naming `rel` when a component is a symbolic link, a directory on
  // the way is not one, the file is not a regular file (a FIFO, device, socket,
  // directory), has other hard links, or lies on another file system.
  Result<UniqueFd> OpenFile(const std::string& rel) const;

  // The whole regular file at `rel`; FailedPrecondition when it holds more than
  // `max_bytes`. Errors as OpenFile.
  Result<std::string> ReadFile(const std::string& rel, int64_t max_bytes) const;

  // The regular files directly in the directory `rel_dir` whose names end in `suffix`,
  // sorted by name. FailedPrecondition naming the entry when one with that suffix is
  // anything but a regular file (a link to a host file, a directory, a FIFO), or when
  // `rel_dir` itself is a link; NotFound when `rel_dir` does not exist.
  Result<std::vector<UntrustedFile>> ListFiles(const std::string& rel_dir,
                                               const std::string& suffix) const;

  // Copies `file` (listed in `rel_dir`) to `dest`, a new file (created exclusively, mode
  // 0644) in a directory the build cannot reach. Refuses a file that is no longer the one
  // listed (another device or inode) or that holds more than `max_bytes`. Returns the
  // bytes copied.
  Result<int64_t> CopyOut(const std::string& rel_dir, const UntrustedFile& file,
                          const std::string& dest, int64_t max_bytes) const;

 private:
  UntrustedDir(std::string root, UniqueFd fd, dev_t dev)
      : root_(std::move(root)), fd_(std::move(fd)), dev_(dev) {}
  // The directory `rel` (may be "" for the root itself), walked without following links.
  Result<UniqueFd> OpenDir(const std::string& rel) const;

  std::string root_;
  UniqueFd fd_;
  dev_t dev_ = 0;
};

// The files directly in `workspace`/`rel_dir` whose names end in `suffix` (a build's
// wheels), copied into `out_dir`, a directory the build cannot reach, created here (mode
// 0755) and emptied first. On success the copies' paths, sorted. The build's files are
// only read: never followed, changed or removed. FailedPrecondition (naming the entry)
// when the build left a link, a FIFO or any other non-regular entry there or the wheel
// directory is itself a link; NotFound when `rel_dir` does not exist.
Result<std::vector<std::string>> CopyOutFiles(const std::string& workspace,
                                              const std::string& rel_dir, const std::string& suffix,
                                              const std::string& out_dir, int64_t max_bytes);

// Makes `workspace`/`name` (one path component) a fresh, empty directory owned by the
// worker: whatever a build left there, a link to a host directory included, is removed
// without being followed. Returns its path.
Result<std::string> MakeFreshDir(const std::string& workspace, const std::string& name);

// Splits `rel` into its components; InvalidArgument for "", ".", "..", empty components
// or an absolute path. Exposed for tests.
Result<std::vector<std::string>> SplitRelative(const std::string& rel);

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_UNTRUSTED_DIR_H_
