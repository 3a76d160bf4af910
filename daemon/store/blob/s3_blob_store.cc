#include "daemon/store/blob/s3_blob_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>
#include <vector>

#include "common/fs.h"
#include "common/log.h"

namespace farm::s3 {
namespace {

namespace stdfs = std::filesystem;

// Streams an object in ranged GETs, one chunk in memory at a time.
class RangeReader final : public store::BlobReader {
 public:
  RangeReader(S3Client* client, std::string key, int64_t size, int64_t offset, int64_t chunk)
      : client_(client), key_(std::move(key)), size_(size), pos_(offset), chunk_(chunk) {}
  int64_t size() const override { return size_; }
  Status Read(size_t max, std::string* out) override {
    out->clear();
    if (buffered_ == buffer_.size()) {
      if (pos_ >= size_) return Status::Ok();
      int64_t total = 0;
      FARM_ASSIGN_OR_RETURN(buffer_,
                            client_->GetRange(key_, pos_, std::min(chunk_, size_ - pos_), &total));
      if (buffer_.empty() || total != size_) {
        return Status::DataLoss("S3 object " + key_ + " changed size while being read");
      }
      pos_ += static_cast<int64_t>(buffer_.size());
      buffered_ = 0;
    }
    size_t n = std::min(max, buffer_.size() - buffered_);
    out->assign(buffer_, buffered_, n);
    buffered_ += n;
    return Status::Ok();
  }

 private:
  S3Client* client_;
  std::string key_;
  int64_t size_;
  int64_t pos_;
  int64_t chunk_;
  std::string buffer_;
  size_t buffered_ = 0;
};

class S3BlobStore final : public store::BlobStore {
 public:
  S3BlobStore(std::unique_ptr<httpc::HttpClient> http, S3Config config, S3BlobStoreOptions options,
              const Clock& clock, httpc::Sleeper& sleeper, RetryLimits limits)
      : BlobStore(options.work_dir + "/tmp"),
        http_(std::move(http)),
        client_(std::move(config), *http_, clock, sleeper, limits),
        options_(std::move(options)),
        cache_dir_(options_.work_dir + "/cache") {}

  bool Contains(const std::string& sha256) override {
    if (!store::IsBlobName(sha256)) return false;
    if (Known(sha256)) return true;
    auto size = client_.HeadObject(Key(sha256));
    if (size.ok()) {
      Remember(sha256);
      return true;
    }
    if (size.status().code() != StatusCode::kNotFound) {
      log::Warn("cannot tell whether blob " + sha256 + " is stored: " + size.status().message());
    }
    return false;
  }

  Status Remove(const std::string& sha256) override {
    if (!store::IsBlobName(sha256)) {
      return Status::InvalidArgument("sha256 must be 64 lowercase hex digits");
    }
    {
      std::lock_guard lock(mu_);
      known_.erase(sha256);
      ::unlink(CachePath(sha256).c_str());
    }
    return client_.DeleteObject(Key(sha256));
  }

  Result<std::unique_ptr<store::BlobReader>> OpenRead(const std::string& sha256,
                                                      int64_t offset) override {
    if (!store::IsBlobName(sha256)) return Status::NotFound("no blob " + sha256.substr(0, 80));
    if (auto cached = store::OpenFileReader(CachePath(sha256), offset);
        cached.ok() || cached.status().code() != StatusCode::kNotFound) {
      return cached;
    }
    FARM_ASSIGN_OR_RETURN(int64_t size, client_.HeadObject(Key(sha256)));
    if (offset < 0 || offset > size) {
      return Status::InvalidArgument("offset " + std::to_string(offset) +
                                     " is outside the blob's " + std::to_string(size) + " bytes");
    }
    return std::unique_ptr<store::BlobReader>(
        new RangeReader(&client_, Key(sha256), size, offset, options_.read_chunk_bytes));
  }

  Result<std::string> LocalPath(const std::string& sha256) override {
    if (!store::IsBlobName(sha256)) return Status::NotFound("no blob " + sha256.substr(0, 80));
    std::string path = CachePath(sha256);
    if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) return path;  // a use: now
    FARM_RETURN_IF_ERROR(Download(sha256, path));
    Evict(path);
    return path;
  }

  // The staging directory's uploads, and the cache's downloads in progress.
  Result<store::SweepCounts> SweepTemporaryFiles(int64_t now_unix_s) override {
    FARM_ASSIGN_OR_RETURN(store::SweepCounts counts, BlobStore::SweepTemporaryFiles(now_unix_s));
    FARM_ASSIGN_OR_RETURN(
        store::SweepCounts cached,
        store::SweepTempDir(
            cache_dir_,
            [](const std::string& name) { return name.find(".part-") != std::string::npos; },
            now_unix_s));
    counts.files += cached.files;
    counts.bytes += cached.bytes;
    return counts;
  }

  Result<std::string> PresignedUrl(const std::string& sha256, const std::string& filename,
                                   int64_t ttl_s) override {
    if (!store::IsBlobName(sha256)) return Status::NotFound("no blob " + sha256.substr(0, 80));
    ttl_s = std::clamp<int64_t>(ttl_s, 1, options_.presigned_max_ttl_s);
    Params overrides;
    if (!filename.empty()) {
      std::string safe;
      for (char c : filename) safe += (c == '"' || c == '\\' || c < 0x20) ? '_' : c;
      overrides.emplace_back("response-content-disposition",
                             "attachment; filename=\"" + safe + "\"");
    }
    return client_.PresignedGetUrl(Key(sha256), ttl_s, overrides);
  }

 protected:
  Status Place(const std::string& temp_path, const std::string& sha256, int64_t size) override {
    Status placed = Upload(temp_path, sha256, size);
    if (!placed.ok()) {
      ::unlink(temp_path.c_str());
      return placed;
    }
    Remember(sha256);
    std::string cached = CachePath(sha256);
    if (::rename(temp_path.c_str(), cached.c_str()) != 0) {
      ::unlink(temp_path.c_str());
    } else {
      Evict(cached);
    }
    return Status::Ok();
  }

 public:
  // Learns which blobs the bucket holds from its listing (1000 keys a request), so that
  // the index's first listing after a start does not ask for each blob one at a time.
  // Bounded to kMaxListPages; a failure (false) only leaves the per-blob questions.
  bool LearnStoredBlobs() {
    constexpr int kMaxListPages = 10'000;
    std::string token;
    std::vector<std::string> found;
    for (int page = 0; page < kMaxListPages; ++page) {
      auto keys = client_.ListKeys(options_.prefix.empty() ? "" : options_.prefix + "/", &token);
      if (!keys.ok()) {
        log::Warn("listing the blob bucket failed: " + keys.status().message());
        return false;
      }
      for (const std::string& key : *keys) {
        std::string name = key.substr(key.rfind('/') + 1);
        if (store::IsBlobName(name) && key == Key(name)) found.push_back(std::move(name));
      }
      if (token.empty()) break;
    }
    std::lock_guard lock(mu_);
    known_.insert(found.begin(), found.end());
    return true;
  }

  // Aborts multipart uploads under the prefix begun more than abandoned_upload_s ago: a
  // farmd that crashed during an upload left them, and their parts are billed. Younger
  // ones may belong to a farmd sharing the bucket that is uploading right now.
  void AbortAbandonedUploads(int64_t now_unix_s) {
    std::string marker;
    for (int page = 0; page < 100; ++page) {
      auto uploads = client_.ListMultipartUploads(
          options_.prefix.empty() ? "" : options_.prefix + "/", &marker);
      if (!uploads.ok()) {
        log::Warn("listing unfinished uploads failed: " + uploads.status().message());
        return;
      }
      for (const auto& u : *uploads) {
        if (now_unix_s - u.initiated_unix_s < options_.abandoned_upload_s) continue;
        Status aborted = client_.AbortMultipartUpload(u.key, u.upload_id);
        log::Info("aborted the unfinished upload of " + u.key + ": " +
                  (aborted.ok() ? "done" : aborted.message()));
      }
      if (marker.empty()) return;
    }
  }

 private:
  std::string Key(const std::string& sha256) const {
    std::string rel = sha256.substr(0, 2) + "/" + sha256;
    return options_.prefix.empty() ? rel : options_.prefix + "/" + rel;
  }
  std::string CachePath(const std::string& sha256) const { return cache_dir_ + "/" + sha256; }

  bool Known(const std::string& sha256) {
    std::lock_guard lock(mu_);
    return known_.count(sha256) > 0;
  }
  void Remember(const std::string& sha256) {
    std::lock_guard lock(mu_);
    known_.insert(sha256);
  }

  Status Upload(const std::string& file, const std::string& sha256, int64_t size) {
    const std::string key = Key(sha256);
    auto existing = client_.HeadObject(key);
    if (existing.ok() && *existing == size) return Status::Ok();  // content-addressed: done
    if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
      return existing.status();
    }
    if (size < options_.multipart_threshold) return client_.PutObject(key, file, size, sha256);
    FARM_ASSIGN_OR_RETURN(std::string upload_id, client_.CreateMultipartUpload(key));
    Status uploaded = UploadParts(key, upload_id, file, size);
    if (uploaded.ok()) return Status::Ok();
    Status aborted = client_.AbortMultipartUpload(key, upload_id);
    if (!aborted.ok()) log::Warn("aborting the upload of " + key + " failed: " + aborted.message());
    return uploaded;
  }

  Status UploadParts(const std::string& key, const std::string& upload_id, const std::string& file,
                     int64_t size) {
    std::vector<std::string> etags;
    for (int64_t offset = 0; offset < size; offset += options_.part_bytes) {
      int64_t length = std::min(options_.part_bytes, size - offset);
      FARM_ASSIGN_OR_RETURN(std::string etag,
                            client_.UploadPart(key, upload_id, static_cast<int>(etags.size()) + 1,
                                               file, offset, length));
      etags.push_back(std::move(etag));
    }
    return client_.CompleteMultipartUpload(key, upload_id, etags);
  }

  // Fetches the object into `path` through a temporary file, verifying its sha256.
  Status Download(const std::string& sha256, const std::string& path) {
    FARM_ASSIGN_OR_RETURN(auto reader, OpenRead(sha256, 0));
    std::string tmp = path + ".part-" + RandomHex(6);
    FARM_ASSIGN_OR_RETURN(store::LockedFile file, store::CreateLockedFile(tmp));
    std::unique_ptr<FILE, int (*)(FILE*)> out(file.file, fclose);
    std::unique_ptr<int, void (*)(int*)> lock(&file.lock_fd, [](int* fd) { ::close(*fd); });
    Sha256 hasher;
    std::string buf;
    Status status;
    while (status.ok()) {
      status = reader->Read(1 << 20, &buf);
      if (!status.ok() || buf.empty()) break;
      hasher.Update(buf);
      if (fwrite(buf.data(), 1, buf.size(), out.get()) != buf.size()) {
        status = Status::Internal("cannot write " + tmp);
      }
    }
    if (status.ok() && fflush(out.get()) != 0) status = Status::Internal("cannot write " + tmp);
    out.reset();
    if (status.ok() && hasher.HexDigest() != sha256) {
      status = Status::DataLoss("S3 object " + Key(sha256) + " does not hash to its name");
    }
    if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      status = Status::Internal("cannot move " + tmp + " into the cache");
    }
    if (!status.ok()) ::unlink(tmp.c_str());
    return status;
  }

  // Removes the least recently used cached copies until the cache fits, sparing `keep`.
  void Evict(const std::string& keep) {
    std::lock_guard lock(evict_mu_);
    struct Entry {
      stdfs::file_time_type used;
      std::string path;
      int64_t size;
    };
    std::vector<Entry> entries;
    int64_t total = 0;
    std::error_code ec;
    for (const auto& e : stdfs::directory_iterator(cache_dir_, ec)) {
      if (!e.is_regular_file(ec) || e.path().string().find(".part-") != std::string::npos) {
        continue;
      }
      int64_t size = static_cast<int64_t>(e.file_size(ec));
      entries.push_back({e.last_write_time(ec), e.path().string(), size});
      total += size;
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.used < b.used; });
    for (const auto& e : entries) {
      if (total <= options_.cache_bytes) break;
      if (e.path == keep) continue;
      if (::unlink(e.path.c_str()) == 0) total -= e.size;
    }
  }

  std::unique_ptr<httpc::HttpClient> http_;
  S3Client client_;
  const S3BlobStoreOptions options_;
  const std::string cache_dir_;
  std::mutex mu_;
  std::set<std::string> known_;  // blobs seen in the bucket (guarded by mu_)
  std::mutex evict_mu_;
};

}  // namespace

Result<std::unique_ptr<store::BlobStore>> OpenS3BlobStore(
    S3Config config, S3BlobStoreOptions options, std::unique_ptr<httpc::HttpClient> http,
    const Clock& clock, httpc::Sleeper& sleeper, RetryLimits limits) {
  if (options.part_bytes < (int64_t{5} << 20)) {
    return Status::InvalidArgument("S3 multipart parts must be at least 5 MiB");
  }
  if (options.multipart_threshold < options.part_bytes)
    options.multipart_threshold = options.part_bytes;
  FARM_RETURN_IF_ERROR(fs::MakeDirs(options.work_dir + "/tmp", 0700));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(options.work_dir + "/cache", 0700));
  std::unique_ptr<S3BlobStore> s3(new S3BlobStore(std::move(http), std::move(config),
                                                  std::move(options), clock, sleeper, limits));
  // A bucket out of reach costs the start one listing's retries, not two.
  if (s3->LearnStoredBlobs()) s3->AbortAbandonedUploads(clock.NowUnixMs() / 1000);
  return std::unique_ptr<store::BlobStore>(std::move(s3));
}

}  // namespace farm::s3
