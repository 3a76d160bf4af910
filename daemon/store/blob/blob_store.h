// BlobStore: artifacts (wheels, source archives) addressed by their sha256. The local
// directory store (<root>/ab/abcdef...) is the default; blob/s3_blob_store.h holds one on an
// S3-compatible object store. Every implementation shares the write path: a blob is
// written to a temporary file in the store's staging directory, its size and digest are
// verified and the caller's check runs on the complete file, and only then does the
// implementation place it (a rename, or an upload). A crash never leaves a partial blob
// under its final name, and since the name is the content, writing a blob twice is
// harmless.
//
// A temporary file is held locked by its writer until the blob is placed (temp_files.h),
// so that SweepTemporaryFiles, at farmd start, removes only those whose writer died (kill
// -9 during an upload) and never an upload another live farmd is receiving.
//
// Thread-safety: every method of every implementation may be called from several threads;
// uploads use distinct temporary files.
#ifndef FARM_DAEMON_STORE_BLOB_BLOB_STORE_H_
#define FARM_DAEMON_STORE_BLOB_BLOB_STORE_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "common/status.h"
#include "daemon/store/blob/temp_files.h"

namespace farm::store {

class BlobWriter;

// True for 64 lowercase hex digits, the only names blobs have.
bool IsBlobName(const std::string& sha256);

// Sequential reads of one stored blob.
class BlobReader {
 public:
  virtual ~BlobReader() = default;
  // The blob's whole size (not what is left after the starting offset).
  virtual int64_t size() const = 0;
  // Replaces `*out` with the next bytes (at most `max`); an empty `*out` means the end.
  virtual Status Read(size_t max, std::string* out) = 0;
};

class BlobStore {
 public:
  // The local directory store at `root` (created when missing).
  static Result<std::unique_ptr<BlobStore>> Open(const std::string& root);

  virtual ~BlobStore() = default;

  // Starts an upload that must end with the given size and sha256 (lowercase hex).
  Result<std::unique_ptr<BlobWriter>> BeginWrite(int64_t expected_size,
                                                 const std::string& expected_sha256);
  // Whether the blob is stored. A store that cannot tell (a remote store out of reach
  // after its retries) answers false and logs why.
  virtual bool Contains(const std::string& sha256) = 0;
  // Removes a stored blob; OK when it is not there. Callers must know that nothing refers
  // to it any more (the store's records say which blob is what).
  virtual Status Remove(const std::string& sha256) = 0;
  // Reads the blob from byte `offset` on. NotFound when it is not stored; InvalidArgument
  // when the offset lies past its end.
  virtual Result<std::unique_ptr<BlobReader>> OpenRead(const std::string& sha256,
                                                       int64_t offset = 0) = 0;
  // A local file holding the blob, for callers that need a file (wheel inspection, asset
  // uploads, the index's file responses). The local store gives the blob itself; a remote
  // store a copy in its bounded cache. The file must only be read. NotFound when the blob
  // is not stored.
  virtual Result<std::string> LocalPath(const std::string& sha256) = 0;
  // A URL anyone may GET the blob from for `ttl_s` seconds, served as `filename`.
  // Unimplemented where the store has no such URLs (the local store).
  virtual Result<std::string> PresignedUrl(const std::string& sha256, const std::string& filename,
                                           int64_t ttl_s);
  // Removes the temporary files of writers that are gone (uploads, and a remote store's
  // cache downloads, cut short by a crash) and of any older than a day (temp_files.h).
  // `now_unix_s` is the current time. Returns what it removed.
  virtual Result<SweepCounts> SweepTemporaryFiles(int64_t now_unix_s);

 protected:
  // `staging_dir` exists and lies on the file system of the temporary files.
  explicit BlobStore(std::string staging_dir) : staging_(std::move(staging_dir)) {}
  const std::string& staging_dir() const { return staging_; }
  // Makes the verified, checked, fsynced file `temp_path` the blob `sha256`. The
  // implementation owns the file from here on (moves or deletes it), also on failure.
  virtual Status Place(const std::string& temp_path, const std::string& sha256, int64_t size) = 0;

 private:
  friend class BlobWriter;
  std::string staging_;
};

class BlobWriter {
 public:
  ~BlobWriter();
  // Appends bytes; fails with InvalidArgument once more than the expected size arrived.
  Status Append(std::string_view data);
  // Checks run on the complete, verified bytes before they are placed in the store.
  using Check = std::function<Status(const std::string& temp_path)>;
  // Verifies size and digest, runs `check` (when given) on the file, then places the blob
  // (fsynced first). On mismatch the temporary file is removed and DataLoss says what
  // differed; a failed check removes it too and returns the check's status.
  Status Commit(const Check& check = nullptr);

 private:
  friend class BlobStore;
  BlobWriter(BlobStore* store, std::string tmp, int64_t size, std::string sha256);
  BlobStore* store_;
  std::string tmp_;
  int64_t expected_size_;
  std::string expected_sha_;
  int64_t written_ = 0;
  FILE* file_ = nullptr;
  int lock_fd_ = -1;  // holds the temporary file's lock until the writer is destroyed
  Sha256 hasher_;
  bool handed_over_ = false;
};

// Reads a local file from `offset` on (the local store's reader, and a remote store's
// reader of its cached copies).
Result<std::unique_ptr<BlobReader>> OpenFileReader(const std::string& path, int64_t offset);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_BLOB_BLOB_STORE_H_
