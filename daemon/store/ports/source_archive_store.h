// SourceArchiveStore: uploaded source archives builds and schedules name, and collecting
// those nothing names any more.
#ifndef FARM_DAEMON_STORE_PORTS_SOURCE_ARCHIVE_STORE_H_
#define FARM_DAEMON_STORE_PORTS_SOURCE_ARCHIVE_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// A source archive a client uploaded and farmd checked; its bytes are the blob `sha256`.
struct SourceArchiveRow {
  std::string sha256;
  int64_t size = 0;
  int64_t files = 0;
  std::string origin;       // what the client packed, for people
  std::string uploaded_by;  // the token's name
  int64_t created_ms = 0;
  int64_t last_used_ms = 0;  // upload, lookup or a build or schedule naming it
};

class SourceArchiveStore {
 public:
  virtual ~SourceArchiveStore() = default;

  // Records a checked upload; an archive already recorded only gets its last use updated.
  virtual Status RecordSourceArchive(const SourceArchiveRow& row) = 0;
  // NotFound when no such archive was recorded.
  virtual Result<SourceArchiveRow> GetSourceArchive(const std::string& sha256) = 0;
  // Marks the archive used at now_ms; NotFound when it is not recorded.
  virtual Status TouchSourceArchive(const std::string& sha256, int64_t now_ms) = 0;
  // Archives unused since before `unused_before_ms` that no schedule (not deleted), no
  // queued or running build and no artifact names, oldest use first, at most `limit`.
  virtual Result<std::vector<SourceArchiveRow>> ListCollectableSources(int64_t unused_before_ms,
                                                                       int limit) = 0;
  // Forgets the archive when it is still collectable as ListCollectableSources defines it
  // (checked in the same statement, so a build submitted meanwhile keeps it). Returns
  // whether it was forgotten; the caller then removes the blob.
  virtual Result<bool> ForgetSourceArchive(const std::string& sha256, int64_t unused_before_ms) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_SOURCE_ARCHIVE_STORE_H_
