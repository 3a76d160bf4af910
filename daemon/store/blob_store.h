// BlobStore: artifacts on disk, addressed by their sha256 (<root>/ab/abcdef...). A blob is
// written to a temporary file, verified, then renamed into place, so a crash never leaves
// a partial file under a final name. Thread-safe: uploads use distinct temporary files.
#ifndef FARM_DAEMON_STORE_BLOB_STORE_H_
#define FARM_DAEMON_STORE_BLOB_STORE_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "common/status.h"

namespace farm::store {

class BlobWriter;

class BlobStore {
 public:
  // Creates `root` when missing.
  static Result<std::unique_ptr<BlobStore>> Open(const std::string& root);

  // Starts an upload that must end with the given size and sha256 (lowercase hex).
  Result<std::unique_ptr<BlobWriter>> BeginWrite(int64_t expected_size,
                                                 const std::string& expected_sha256);
  // Path of a stored blob (which may not exist).
  std::string PathFor(const std::string& sha256) const;
  bool Contains(const std::string& sha256) const;
  // Removes a stored blob; OK when it is not there. Callers must know that nothing refers
  // to it any more (the store's records say which blob is what).
  Status Remove(const std::string& sha256);

 private:
  explicit BlobStore(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

class BlobWriter {
 public:
  ~BlobWriter();
  // Appends bytes; fails with InvalidArgument once more than the expected size arrived.
  Status Append(std::string_view data);
  // Checks run on the complete, verified bytes before they take their final name.
  using Check = std::function<Status(const std::string& temp_path)>;
  // Verifies size and digest, runs `check` (when given) on the file, then moves the blob
  // into place (fsynced). On mismatch the temporary file is removed and DataLoss says what
  // differed; a failed check removes it too and returns the check's status.
  Status Commit(const Check& check = nullptr);

 private:
  friend class BlobStore;
  BlobWriter(std::string tmp, std::string final_path, int64_t size, std::string sha256);
  std::string tmp_;
  std::string final_;
  int64_t expected_size_;
  std::string expected_sha_;
  int64_t written_ = 0;
  FILE* file_ = nullptr;
  Sha256 hasher_;
  bool committed_ = false;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_BLOB_STORE_H_
