#include "worker/env/downloads.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/sha256.h"
#include "common/upstream/simple_index.h"
#include "worker/env/failure.h"

namespace farm::env {
namespace {

constexpr char kBlob[] = "blob";

// A file being written: every block is hashed and counted as it is stored.
class BlobWriter {
 public:
  explicit BlobWriter(std::string path) : path_(std::move(path)) {}
  ~BlobWriter() {
    if (fd_ >= 0) close(fd_);
  }
  Status Open() {
    fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    return fd_ < 0 ? ErrnoStatus(errno, "cannot create", path_) : Status::Ok();
  }
  Status Write(std::string_view block) {
    hasher_.Update(block);
    bytes_ += static_cast<int64_t>(block.size());
    for (size_t done = 0; done < block.size();) {
      ssize_t n = write(fd_, block.data() + done, block.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(errno, "cannot write", path_);
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }
  Status Finish() {
    int fd = fd_;
    fd_ = -1;
    if (fsync(fd) != 0) {
      int err = errno;
      close(fd);
      return ErrnoStatus(err, "cannot sync", path_);
    }
    return close(fd) == 0 ? Status::Ok() : ErrnoStatus(errno, "cannot close", path_);
  }
  int64_t bytes() const { return bytes_; }
  std::string HexDigest() { return hasher_.HexDigest(); }

 private:
  std::string path_;
  int fd_ = -1;
  Sha256 hasher_;
  int64_t bytes_ = 0;
};

Status CheckDigest(const std::string& what, const std::string& source, const std::string& want,
                   const std::string& got) {
  if (got == want) return Status::Ok();
  return Status::DataLoss("checksum mismatch for " + what + " from " + source +
                          ": expected sha256 " + want + ", got " + got +
                          "; refused, nothing cached");
}

}  // namespace

Result<std::string> FetchVerified(CacheStore& cache, upstream::Fetcher& fetcher,
                                  const DownloadRequest& request, const ProgressFn& progress) {
  if (!upstream::IsSha256Hex(request.sha256)) {
    return Status::InvalidArgument("no valid sha256 for " + request.what + " (" + request.url +
                                   "): every download must be pinned");
  }
  auto build = [&](const std::string& dir) -> Status {
    BlobWriter out(dir + "/" + kBlob);
    FARM_RETURN_IF_ERROR(out.Open());
    Status fetched = fetcher.Download(request.url, [&](std::string_view block) -> Status {
      if (request.size >= 0 && out.bytes() + static_cast<int64_t>(block.size()) > request.size) {
        return Status::DataLoss("size mismatch for " + request.what + " from " + request.url +
                                ": more than the " + std::to_string(request.size) +
                                " bytes listed; refused, nothing cached");
      }
      FARM_RETURN_IF_ERROR(out.Write(block));
      if (progress) progress(out.bytes(), request.size);
      return Status::Ok();
    });
    FARM_RETURN_IF_ERROR(fetched);
    FARM_RETURN_IF_ERROR(out.Finish());
    if (request.size >= 0 && out.bytes() != request.size) {
      return Status::DataLoss("size mismatch for " + request.what + " from " + request.url + ": " +
                              std::to_string(out.bytes()) + " bytes, " +
                              std::to_string(request.size) + " listed; refused, nothing cached");
    }
    // A size the index did not list is known now: the end is reported as for a listed one.
    if (progress && request.size < 0) progress(out.bytes(), out.bytes());
    return CheckDigest(request.what, request.url, request.sha256, out.HexDigest());
  };
  FARM_ASSIGN_OR_RETURN(std::string entry, cache.Ensure(kDownloads, request.sha256, build));
  return entry + "/" + kBlob;
}

Result<std::string> AddLocalFile(CacheStore& cache, const std::string& path) {
  FARM_ASSIGN_OR_RETURN(std::string digest, Sha256FileHex(path));
  auto build = [&](const std::string& dir) -> Status {
    int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return ErrnoStatus(errno, "cannot open", path);
    BlobWriter out(dir + "/" + kBlob);
    Status s = out.Open();
    char buffer[1 << 16];
    while (s.ok()) {
      ssize_t n = read(in, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) s = ErrnoStatus(errno, "cannot read", path);
      if (n <= 0) break;
      s = out.Write(std::string_view(buffer, static_cast<size_t>(n)));
    }
    close(in);
    FARM_RETURN_IF_ERROR(s);
    FARM_RETURN_IF_ERROR(out.Finish());
    return CheckDigest(path, "the local file (changed while read)", digest, out.HexDigest());
  };
  FARM_RETURN_IF_ERROR(cache.Ensure(kDownloads, digest, build).status());
  return digest;
}

}  // namespace farm::env
