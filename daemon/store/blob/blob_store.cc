#include "daemon/store/blob/blob_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace farm::store {
namespace {

class FileReader final : public BlobReader {
 public:
  FileReader(FILE* f, int64_t size) : file_(f), size_(size) {}
  ~FileReader() override { fclose(file_); }
  int64_t size() const override { return size_; }
  Status Read(size_t max, std::string* out) override {
    out->resize(max);
    size_t n = fread(out->data(), 1, max, file_);
    out->resize(n);
    if (n == 0 && ferror(file_)) return Status::DataLoss("reading a blob failed");
    return Status::Ok();
  }

 private:
  FILE* file_;
  int64_t size_;
};

// Blobs as files under one directory: <root>/ab/abcdef..., staged in <root>/tmp.
class LocalBlobStore final : public BlobStore {
 public:
  explicit LocalBlobStore(std::string root) : BlobStore(root + "/tmp"), root_(std::move(root)) {}

  bool Contains(const std::string& sha256) override {
    return IsBlobName(sha256) && fs::Exists(PathFor(sha256));
  }

  Status Remove(const std::string& sha256) override {
    if (!IsBlobName(sha256))
      return Status::InvalidArgument("sha256 must be 64 lowercase hex digits");
    std::string path = PathFor(sha256);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::Internal("cannot remove " + path + ": " + std::strerror(errno));
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<BlobReader>> OpenRead(const std::string& sha256, int64_t offset) override {
    FARM_ASSIGN_OR_RETURN(std::string path, LocalPath(sha256));
    return OpenFileReader(path, offset);
  }

  Result<std::string> LocalPath(const std::string& sha256) override {
    if (!Contains(sha256)) return Status::NotFound("blob " + sha256 + " is not stored");
    return PathFor(sha256);
  }

 protected:
  Status Place(const std::string& temp_path, const std::string& sha256, int64_t) override {
    std::string final_path = PathFor(sha256);
    Status made = fs::MakeDirs(root_ + "/" + sha256.substr(0, 2));
    if (!made.ok() || ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
      ::unlink(temp_path.c_str());
      return Status::Internal("cannot move blob into " + final_path);
    }
    return Status::Ok();
  }

 private:
  std::string PathFor(const std::string& sha256) const {
    return root_ + "/" + sha256.substr(0, 2) + "/" + sha256;
  }

  std::string root_;
};

}  // namespace

bool IsBlobName(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::unique_ptr<BlobReader>> OpenFileReader(const std::string& path, int64_t offset) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound("cannot open " + path);
  off_t size = -1;
  if (fseeko(f, 0, SEEK_END) == 0) size = ftello(f);
  if (size < 0 || offset < 0 || offset > size || fseeko(f, offset, SEEK_SET) != 0) {
    fclose(f);
    return Status::InvalidArgument("offset " + std::to_string(offset) + " is outside the blob's " +
                                   std::to_string(size) + " bytes");
  }
  return std::unique_ptr<BlobReader>(new FileReader(f, size));
}

Result<std::unique_ptr<BlobStore>> BlobStore::Open(const std::string& root) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(root + "/tmp"));
  return std::unique_ptr<BlobStore>(new LocalBlobStore(root));
}

Result<std::string> BlobStore::PresignedUrl(const std::string&, const std::string&, int64_t) {
  return Status::Unimplemented("this blob store has no presigned URLs");
}

Result<SweepCounts> BlobStore::SweepTemporaryFiles(int64_t now_unix_s) {
  // Every file of the staging directory is an upload's.
  return SweepTempDir(
      staging_, [](const std::string&) { return true; }, now_unix_s);
}

Result<std::unique_ptr<BlobWriter>> BlobStore::BeginWrite(int64_t expected_size,
                                                          const std::string& expected_sha256) {
  if (!IsBlobName(expected_sha256)) {
    return Status::InvalidArgument("sha256 must be 64 lowercase hex digits");
  }
  if (expected_size < 0) return Status::InvalidArgument("negative size");
  std::string tmp = staging_ + "/" + expected_sha256 + "." + RandomHex(6);
  FARM_ASSIGN_OR_RETURN(LockedFile file, CreateLockedFile(tmp));
  std::unique_ptr<BlobWriter> w(new BlobWriter(this, tmp, expected_size, expected_sha256));
  w->file_ = file.file;
  w->lock_fd_ = file.lock_fd;
  return w;
}

BlobWriter::BlobWriter(BlobStore* store, std::string tmp, int64_t size, std::string sha256)
    : store_(store), tmp_(std::move(tmp)), expected_size_(size), expected_sha_(std::move(sha256)) {}

BlobWriter::~BlobWriter() {
  if (file_) fclose(file_);
  if (!handed_over_) ::unlink(tmp_.c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);  // after the file is placed or gone
}

Status BlobWriter::Append(std::string_view data) {
  if (written_ + static_cast<int64_t>(data.size()) > expected_size_) {
    return Status::InvalidArgument("upload is larger than the announced " +
                                   std::to_string(expected_size_) + " bytes");
  }
  if (fwrite(data.data(), 1, data.size(), file_) != data.size()) {
    return Status::Internal("cannot write " + tmp_);
  }
  hasher_.Update(data);
  written_ += static_cast<int64_t>(data.size());
  return Status::Ok();
}

Status BlobWriter::Commit(const Check& check) {
  if (handed_over_ || file_ == nullptr) return Status::FailedPrecondition("blob already committed");
  if (written_ != expected_size_) {
    return Status::DataLoss("upload ended after " + std::to_string(written_) + " of " +
                            std::to_string(expected_size_) + " bytes");
  }
  std::string actual = hasher_.HexDigest();
  if (actual != expected_sha_) {
    return Status::DataLoss("sha256 mismatch: announced " + expected_sha_ + ", received " + actual);
  }
  if (fflush(file_) != 0 || fsync(fileno(file_)) != 0) return Status::Internal("cannot flush");
  fclose(file_);
  file_ = nullptr;
  if (check) FARM_RETURN_IF_ERROR(check(tmp_));
  handed_over_ = true;
  return store_->Place(tmp_, expected_sha_, expected_size_);
}

}  // namespace farm::store
