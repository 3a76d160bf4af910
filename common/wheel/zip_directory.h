// The stored and unpacked size of every entry of a zip archive, read from its central
// directory (ZIP64 included): what each file of a wheel costs in the wheel file, which
// libarchive's streaming reader does not report. Reads only the end records and the
// directory, every offset and size bounds-checked against the file; an archive whose
// directory cannot be read is an error, never a crash or an unbounded allocation.
// Stateless; concurrent calls are safe.
#ifndef FARM_COMMON_WHEEL_ZIP_DIRECTORY_H_
#define FARM_COMMON_WHEEL_ZIP_DIRECTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

struct ZipEntrySize {
  std::string name;
  int64_t compressed = 0;    // the entry's data as stored (deflated)
  int64_t uncompressed = 0;  // the entry unpacked
};

struct ZipDirectory {
  int64_t file_bytes = 0;             // the archive's size
  std::vector<ZipEntrySize> entries;  // in directory order
};

// Largest central directory read into memory, and most entries listed.
inline constexpr int64_t kMaxZipDirectoryBytes = int64_t{64} << 20;
inline constexpr int kMaxZipDirectoryEntries = 200'000;

// Reads the central directory of the zip archive at `path`. Fails with NotFound when the
// file cannot be opened, DataLoss when the end records or the directory are missing,
// truncated or inconsistent, ResourceExhausted past the limits above.
Result<ZipDirectory> ReadZipDirectory(const std::string& path);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_ZIP_DIRECTORY_H_
