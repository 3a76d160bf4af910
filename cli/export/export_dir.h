// ExportDir: where `farmctl export-index DIR` writes, so that DIR only ever holds a whole
// export. Everything goes into a fresh sibling ".DIR.export-XXXXXX" first; Commit() swaps
// it with DIR in one renameat2(RENAME_EXCHANGE) (a plain rename when DIR is new) and then
// removes the old tree. A process killed before Commit leaves DIR as it was (the next
// export removes the orphaned sibling); one killed after the swap leaves the new export
// and an orphan holding the old one.
//
// DIR is replaced only when it is absent, empty, or carries the marker file of an earlier
// export (kMarkerName), unless `force`. Two exports next to each other are serialized by a
// flock on DIR's parent directory. Not thread-safe.
#ifndef FARM_CLI_EXPORT_EXPORT_DIR_H_
#define FARM_CLI_EXPORT_EXPORT_DIR_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::cli::exporter {

// The marker file of an export, in its root; it records what the export holds (JSON).
inline constexpr char kMarkerName[] = ".farm-export.json";

class ExportDir {
 public:
  // Checks DIR, takes the lock, removes orphans of killed exports and creates the sibling.
  // InvalidArgument when DIR is a file, a symlink, or a directory that is not an export
  // (without `force`); FailedPrecondition when its parent cannot be written or another
  // export next to it is running.
  static Result<std::unique_ptr<ExportDir>> Open(const std::string& dir, bool force);
  ~ExportDir();  // removes the sibling unless committed; releases the lock
  ExportDir(const ExportDir&) = delete;
  ExportDir& operator=(const ExportDir&) = delete;

  // Writes `data` at the export path `path` (checked with SafeExportPath; parents created).
  Status Write(const std::string& path, std::string_view data);

  // Writes the file at `path` from the blocks `fetch` hands to its sink, hashing them;
  // fails (DataLoss, nothing kept) unless they add up to `size` bytes (when >= 0) of sha256
  // `sha256`.
  using Fetcher = std::function<Status(const std::function<Status(std::string_view)>& sink)>;
  Status WriteVerified(const std::string& path, const std::string& sha256, int64_t size,
                       const Fetcher& fetch);

  // Links (or copies) the previous export's `path` into the new one when it is a regular
  // file of sha256 `sha256`; false when there is no such file (then nothing is written).
  Result<bool> ReuseFromPrevious(const std::string& path, const std::string& sha256);

  // Writes the marker and swaps the new tree into DIR.
  Status Commit(const std::string& marker_json);

  const std::string& temp_path() const { return temp_; }

 private:
  ExportDir() = default;
  Result<std::string> Prepare(const std::string& path);
  static Status WriteNew(const std::string& full, std::string_view data);

  std::string dir_;
  std::string parent_;
  std::string temp_;
  bool previous_export_ = false;
  bool committed_ = false;
  int lock_fd_ = -1;
};

}  // namespace farm::cli::exporter

#endif  // FARM_CLI_EXPORT_EXPORT_DIR_H_
