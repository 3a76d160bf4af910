// The rules every archive the farm reads from outside obeys, shared by the wheel checks
// (zip, common/wheel/zip_stream.h) and source archives (tar, source_archive.h): entry names
// stay inside the tree, links do not leave it, and entries and bytes are counted from what
// decompression really produces (header sizes are never trusted). Pure functions and one
// small counter; no I/O. Thread-compatible: one Budget per archive read.
#ifndef FARM_COMMON_ARCHIVE_ENTRY_RULES_H_
#define FARM_COMMON_ARCHIVE_ENTRY_RULES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace farm::archives {

// Limits on what one archive may hold. Crossing one stops the read.
struct Limits {
  // Entries of any kind (files, directories, links) in the archive.
  int64_t max_entries = 100'000;
  // Uncompressed bytes of one entry.
  int64_t max_entry_bytes = int64_t{4} << 30;
  // Uncompressed bytes of all entries together.
  int64_t max_total_bytes = int64_t{16} << 30;
  // Uncompressed bytes produced so far divided by the archive's size on disk. Checked only
  // once `ratio_grace_bytes` have been produced, so tiny archives of text are not flagged.
  double max_ratio = 200.0;
  int64_t ratio_grace_bytes = int64_t{8} << 20;
  // Length of one entry name in bytes.
  int64_t max_name_bytes = 4096;
};

// A broken rule: a stable kebab-case id ("path-dotdot", "too-many-entries", ...) and what
// was found. Empty rule: nothing broken.
struct Violation {
  std::string rule;
  std::string detail;
  bool ok() const { return rule.empty(); }
};

// "a/b/c" -> {"a", "b", "c"}; empty components are kept ("a//b" -> {"a", "", "b"}).
std::vector<std::string_view> PathComponents(std::string_view path);

// The reason `name` is not an acceptable entry name, or "" when it is. Sets *rule to
// "path-absolute", "path-dotdot" or "path-invalid" (empty, NUL, backslash, empty or '.'
// component).
std::string CheckEntryName(std::string_view name, std::string* rule);

// Whether a symlink stored at `name` with target `target` resolves outside the archive's
// root, read lexically (an absolute or empty target always does).
bool LinkEscapesTree(std::string_view name, std::string_view target);

// Counts one archive's entries and decompressed bytes against Limits. `consumed` arguments
// are the archive bytes read so far (libarchive's archive_filter_bytes(a, -1)), from which
// the compression ratio of the current entry is judged.
class Budget {
 public:
  Budget(const Limits& limits, int64_t archive_bytes);
  // One more entry header was read.
  Violation CountEntry();
  // The current entry's data starts at archive byte `consumed`.
  void BeginEntry(int64_t consumed);
  // `n` more bytes of the current entry were produced, `entry_bytes` before them.
  Violation CountBytes(int64_t entry_bytes, int64_t n, int64_t consumed);

  int64_t entries() const { return entries_; }
  int64_t total_bytes() const { return total_bytes_; }

 private:
  const Limits& limits_;
  int64_t archive_bytes_;
  int64_t entries_ = 0;
  int64_t total_bytes_ = 0;
  int64_t entry_start_ = 0;
};

}  // namespace farm::archives

#endif  // FARM_COMMON_ARCHIVE_ENTRY_RULES_H_
