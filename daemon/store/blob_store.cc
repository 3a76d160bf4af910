#include "daemon/store/blob_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace farm::store {
namespace {

bool IsHexSha(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<BlobStore>> BlobStore::Open(const std::string& root) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(root + "/tmp"));
  return std::unique_ptr<BlobStore>(new BlobStore(root));
}

std::string BlobStore::PathFor(const std::string& sha256) const {
  return root_ + "/" + sha256.substr(0, 2) + "/" + sha256;
}

bool BlobStore::Contains(const std::string& sha256) const {
  return IsHexSha(sha256) && fs::Exists(PathFor(sha256));
}

Status BlobStore::Remove(const std::string& sha256) {
  if (!IsHexSha(sha256)) return Status::InvalidArgument("sha256 must be 64 lowercase hex digits");
  std::string path = PathFor(sha256);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::Internal("cannot remove " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Result<std::unique_ptr<BlobWriter>> BlobStore::BeginWrite(int64_t expected_size,
                                                          const std::string& expected_sha256) {
  if (!IsHexSha(expected_sha256)) {
    return Status::InvalidArgument("sha256 must be 64 lowercase hex digits");
  }
  if (expected_size < 0) return Status::InvalidArgument("negative size");
  FARM_RETURN_IF_ERROR(fs::MakeDirs(root_ + "/" + expected_sha256.substr(0, 2)));
  std::string tmp = root_ + "/tmp/" + expected_sha256 + "." + RandomHex(6);
  std::unique_ptr<BlobWriter> w(
      new BlobWriter(tmp, PathFor(expected_sha256), expected_size, expected_sha256));
  w->file_ = fopen(tmp.c_str(), "wb");
  if (!w->file_) return Status::Internal("cannot create " + tmp);
  return w;
}

BlobWriter::BlobWriter(std::string tmp, std::string final_path, int64_t size, std::string sha256)
    : tmp_(std::move(tmp)), final_(std::move(final_path)), expected_size_(size),
      expected_sha_(std::move(sha256)) {}

BlobWriter::~BlobWriter() {
  if (file_) fclose(file_);
  if (!committed_) ::unlink(tmp_.c_str());
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
  if (::rename(tmp_.c_str(), final_.c_str()) != 0) {
    return Status::Internal("cannot move blob into " + final_);
  }
  committed_ = true;
  return Status::Ok();
}

}  // namespace farm::store
