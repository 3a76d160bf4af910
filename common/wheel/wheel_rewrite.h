// The machinery every in-place edit of a built wheel shares (relabel.h renames the
// version, requires_dist.h pins a requirement): read the one top-level *.dist-info's
// METADATA and RECORD, rewrite RECORD for a new METADATA (and optionally new .dist-info /
// .data directory names), and write the wheel again with libarchive, entry by entry in
// the original order. Every other file's bytes are copied as they are; the output is
// deterministic (same input and edit give the same bytes), so an edit repeated after a
// crash yields the same sha256.
//
// The input is a wheel a build wrote, so it is read as hostile: METADATA and RECORD are
// bounded in size, an entry name that appears twice or a second top-level *.dist-info is
// refused (an installer and the farm could read different copies), and a RECORD row
// naming a path outside the wheel (absolute, "..", backslash) is refused. Stateless;
// concurrent calls on different files are safe.
#ifndef FARM_COMMON_WHEEL_WHEEL_REWRITE_H_
#define FARM_COMMON_WHEEL_WHEEL_REWRITE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

// Largest METADATA or RECORD an edit reads into memory.
inline constexpr int64_t kMaxDistInfoBytes = int64_t{16} << 20;

// The files of the wheel's *.dist-info an edit changes.
struct DistInfoText {
  std::string stem;  // "attn_example-0.1.0": the .dist-info directory without its suffix
  std::string metadata;
  std::string record;
};

// Reads METADATA and RECORD of the wheel at `path`. Fails with InvalidArgument for a file
// that is not a zip archive, a wheel without exactly one top-level *.dist-info holding
// both files, an entry name that appears twice, or METADATA / RECORD larger than
// kMaxDistInfoBytes; DataLoss for an unreadable entry.
Result<DistInfoText> ReadDistInfoText(const std::string& path);

// Renames paths under the old .dist-info and .data directories to the new stem (the same
// stem renames nothing).
struct DistInfoRenamer {
  std::string old_stem;
  std::string new_stem;
  std::string operator()(const std::string& name) const;
};

// RECORD rewritten for a wheel whose METADATA becomes `new_metadata`: every path renamed
// by `rename`, METADATA's row given the new sha256 and size, RECORD's own row left without
// hash and size, every other row as it was (re-quoted as RFC 4180 CSV). Fails with
// InvalidArgument for malformed CSV, a row naming a path outside the wheel, or a RECORD
// that does not list METADATA exactly once.
Result<std::string> RewriteRecord(const std::string& record, const DistInfoRenamer& rename,
                                  const std::string& new_metadata);

// Writes the wheel at `in_path` to `out_path` (replaced when present, through a
// temporary file in the same directory renamed into place) with every entry renamed by
// `rename` and METADATA and RECORD replaced by `metadata` and `record`. Fails with
// DataLoss when an entry's size differs from its header, Internal on write errors; no
// partial output is left behind.
Status WriteRewrittenWheel(const std::string& in_path, const std::string& out_path,
                           const DistInfoRenamer& rename, const std::string& metadata,
                           const std::string& record);

// A file an edit adds to the wheel: its path (under the renamed .dist-info) and bytes.
struct AddedEntry {
  std::string name;
  std::string content;
};

// As above, with `added` written just before RECORD (whose rows the caller gives them).
Status WriteRewrittenWheel(const std::string& in_path, const std::string& out_path,
                           const DistInfoRenamer& rename, const std::string& metadata,
                           const std::string& record, const std::vector<AddedEntry>& added);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_WHEEL_REWRITE_H_
