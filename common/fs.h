// File-system helpers used by every component. All return Status; none throws.
#ifndef FARM_COMMON_FS_H_
#define FARM_COMMON_FS_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace farm::fs {

// Reads the whole file. Fails with NotFound when it does not exist.
Result<std::string> ReadFile(const std::string& path);

// Writes `data` to `path` atomically: a temporary file in the same directory is written,
// fsynced and renamed over `path`, so readers see the old or the new content, never a
// mix. `mode` is applied to the temporary file before any byte is written.
Status WriteFileAtomic(const std::string& path, const std::string& data, int mode = 0644);

// Creates `path` and its parents (mode 0755 unless given); OK when it exists.
Status MakeDirs(const std::string& path, int mode = 0755);

// Removes `path` recursively; OK when it does not exist.
Status RemoveAll(const std::string& path);

// Creates a fresh directory under `parent` (or $TMPDIR) named `prefix` + random suffix.
Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix);

bool Exists(const std::string& path);

// A size for people: "312 B", "1.5 MiB", "2.25 GiB".
std::string HumanBytes(int64_t bytes);

}  // namespace farm::fs

#endif  // FARM_COMMON_FS_H_
