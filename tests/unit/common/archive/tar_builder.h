// Writes tar archives entry by entry for tests, hostile ones included: names, types and
// link targets are stored exactly as given.
#ifndef FARM_TESTS_UNIT_COMMON_ARCHIVE_TAR_BUILDER_H_
#define FARM_TESTS_UNIT_COMMON_ARCHIVE_TAR_BUILDER_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace farm::testing {

struct TarEntrySpec {
  enum Kind { kFile, kDirectory, kSymlink, kHardlink, kFifo };
  std::string name;
  std::string content;  // files
  Kind kind = kFile;
  std::string target;  // links
  int mode = 0644;
  int64_t mtime = 1'700'000'000;
};

// Writes `entries` as a pax tar to `path`, compressed with `filter` ("", "gzip", "zstd").
Status WriteTar(const std::string& path, const std::vector<TarEntrySpec>& entries,
                const std::string& filter = "");

}  // namespace farm::testing

#endif  // FARM_TESTS_UNIT_COMMON_ARCHIVE_TAR_BUILDER_H_
