// Temporary files whose writer can be told alive or gone. A blob being uploaded lives in a
// temporary file until it is verified; a farmd killed mid-upload leaves that file behind,
// up to the size limit of a source archive per crash. Each such file is created already
// locked (flock) by its writer and the lock lasts until the writer is done with it, so the
// kernel releases it when the writer dies, and a sweep at start can remove what no live
// process writes: never the upload in progress of another farmd sharing the directory (a
// PostgreSQL standby taking over while the old farmd still finishes a call).
//
// A file is created under a hidden name (".NAME.new"), locked, and only then linked as
// NAME, so a sweep never sees an unlocked file of a live writer. Hidden names a writer
// died on in between are removed by age alone.
#ifndef FARM_DAEMON_STORE_BLOB_TEMP_FILES_H_
#define FARM_DAEMON_STORE_BLOB_TEMP_FILES_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "common/status.h"

namespace farm::store {

// A temporary file kept at most this long (by its last write) even while its writer
// holds the lock: an upload stalled for a day is given up. Also the bound for files whose
// writer cannot be told (a file system without locks).
inline constexpr int64_t kTempFileMaxAgeS = 24 * 3600;

// A file opened for writing and locked: `file` writes, `lock_fd` holds the lock (a
// duplicate of the file's descriptor, so the lock outlives fclose(file) until
// close(lock_fd)).
struct LockedFile {
  FILE* file = nullptr;
  int lock_fd = -1;
};

// Creates `path` (which must not exist) for writing, mode 0600, locked as above.
Result<LockedFile> CreateLockedFile(const std::string& path);

struct SweepCounts {
  int files = 0;
  int64_t bytes = 0;
};

// Removes the regular files of `dir` for which `is_temp(name)` holds whose writer is gone
// (no lock held on them) or whose last write is older than `max_age_s` at `now_unix_s`; a
// hidden name (".NAME.new") only by age. Anything else (links, directories, other names)
// is left. A missing directory sweeps nothing.
Result<SweepCounts> SweepTempDir(const std::string& dir,
                                 const std::function<bool(const std::string&)>& is_temp,
                                 int64_t now_unix_s, int64_t max_age_s = kTempFileMaxAgeS);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_BLOB_TEMP_FILES_H_
