// Streams the entries of a zip archive through libarchive with the defences a wheel from
// an untrusted build needs: no entry is ever written to disk, names are checked before
// anything else, sizes are counted from the bytes actually produced (header sizes are not
// trusted), and the scan stops at the first limit crossed. One call owns its libarchive
// handle; concurrent calls on different archives are safe.
#ifndef FARM_COMMON_WHEEL_ZIP_STREAM_H_
#define FARM_COMMON_WHEEL_ZIP_STREAM_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/archive/entry_rules.h"
#include "common/status.h"
#include "common/wheel/problem.h"

namespace farm::wheel {

// Limits on what a scan will read (the rules every archive from outside obeys). Crossing
// one adds a problem and stops the scan.
using ZipLimits = archives::Limits;

// One regular file of the archive, after its bytes were streamed.
struct ZipFile {
  std::string name;
  int64_t size = 0;        // bytes actually produced by decompression
  std::string sha256;      // raw 32-byte digest of those bytes
  std::string content;     // the first bytes, as many as the keep policy asked for
  bool truncated = false;  // the file was longer than what the keep policy kept
};

// Given a file name and its first bytes (up to 64; fewer only for shorter files), returns
// how many bytes of content the scan should keep in ZipFile::content (0 for none).
using KeepPolicy = std::function<int64_t(const std::string& name, std::string_view head)>;
// Receives every regular file with an acceptable name, in archive order.
using FileHandler = std::function<void(ZipFile&& file)>;

// What a scan saw besides the files themselves.
struct ZipScan {
  int64_t entries = 0;
  int64_t total_bytes = 0;
  std::vector<std::string> directories;  // directory entries, names without trailing '/'
  std::vector<Problem> problems;
  bool aborted = false;  // a limit or a corrupt archive stopped the scan early
};

// Scans the zip archive at `path` (read with libarchive's seekable zip reader, which
// reads the central directory as installers do). Rejected entries (names that break
// archives::CheckEntryName, symlinks, hard links, device files, encrypted entries,
// duplicate names) become problems naming the entry and the rule and are not
// handed to `handler`. On success returns the scan, whose `problems` may be non-empty;
// fails with NotFound when the file cannot be opened and InvalidArgument when it is not a
// zip archive.
Result<ZipScan> ScanZip(const std::string& path, const ZipLimits& limits, const KeepPolicy& keep,
                        const FileHandler& handler);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_ZIP_STREAM_H_
