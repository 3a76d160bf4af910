// Source archives: the tar files (plain, or gzip, bzip2, xz or zstd compressed) in which a
// client's source tree travels to the workers. farmctl checks a tarball before uploading
// it, farmd checks every upload before it enters the store, and a worker unpacks one only
// through ExtractSourceArchive, all under the same rules (entry_rules.h):
//   - entry names are relative, without '..', '.', empty components or backslashes (a
//     leading "./" is dropped, as tar -C DIR . writes it), and unique;
//   - symlinks point inside the tree, also when followed through other links, and no
//     entry is stored through a link; hard links name an earlier file of the archive;
//   - no devices, fifos or sockets; setuid, setgid and sticky bits are dropped;
//   - entries, bytes per file, bytes in all and the compression ratio are bounded, counted
//     from what decompression produces.
// The first broken rule stops the read. Each call owns its libarchive handles; concurrent
// calls on different archives are safe.
#ifndef FARM_COMMON_ARCHIVE_SOURCE_ARCHIVE_H_
#define FARM_COMMON_ARCHIVE_SOURCE_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/archive/entry_rules.h"
#include "common/sha256.h"
#include "common/status.h"

namespace farm::archives {

// The bounds a source archive lives within unless told otherwise.
Limits SourceArchiveLimits();

// What reading a source archive found.
struct SourceListing {
  int64_t entries = 0;
  int64_t files = 0;        // regular files, hard links included
  int64_t total_bytes = 0;  // their uncompressed bytes
  // The names of regular files and symlinks, in archive order (entry names as stored,
  // without a leading "./").
  std::vector<std::string> names;
};

// Reads the archive at `path` checking every rule, writing nothing. When `raw` is given it
// receives every byte of the file (for its sha256 in the same pass). On success the
// listing; InvalidArgument "RULE: ENTRY: DETAIL" for the first broken rule, or naming why
// the file is not a readable tar archive; NotFound when it cannot be opened.
Result<SourceListing> ScanSourceArchive(const std::string& path, const Limits& limits,
                                        Sha256* raw = nullptr);

// Unpacks the archive at `path` into `dest` (created when missing; it must be empty),
// keeping modification times, under the same rules; errors as ScanSourceArchive. On error
// `dest` may hold part of the tree: the caller removes it.
Result<SourceListing> ExtractSourceArchive(const std::string& path, const std::string& dest,
                                           const Limits& limits);

}  // namespace farm::archives

#endif  // FARM_COMMON_ARCHIVE_SOURCE_ARCHIVE_H_
