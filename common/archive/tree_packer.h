// Packing a source tree into a source archive (farmctl submit). The tree's files are chosen
// by .gitignore files (those of the enclosing git work tree too, as git reads them), extra
// patterns and a size limit, and written in sorted order as a pax tar compressed with zstd
// with only paths, contents, executable bits, link targets and modification times in the
// headers: the same tree always gives the same bytes, so an unchanged tree has the same
// sha256 and uploads nothing. Reads files only; thread-compatible.
#ifndef FARM_COMMON_ARCHIVE_TREE_PACKER_H_
#define FARM_COMMON_ARCHIVE_TREE_PACKER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::archives {

struct PackOptions {
  std::vector<std::string> excludes;     // more .gitignore-style patterns, for the tree's root
  bool gitignore = true;                 // honour .gitignore files
  int64_t max_bytes = int64_t{2} << 30;  // sum of the packed files' sizes
  int64_t max_entries = 500'000;
  // >= 0: the modification time every entry gets in the archive (seconds since the
  // epoch), so that the archive does not depend on when the files were written; < 0: each
  // file's own.
  int64_t mtime = -1;
};

struct TreeEntry {
  enum Kind { kDirectory, kFile, kSymlink };
  std::string path;  // relative to the tree, '/'-separated
  Kind kind = kFile;
  int64_t size = 0;  // files
  bool executable = false;
  int64_t mtime = 0;   // seconds since the epoch
  std::string target;  // symlinks
};

// What will be packed: every entry, sorted by path.
struct TreePlan {
  std::string root;
  std::vector<TreeEntry> entries;
  int64_t files = 0;
  int64_t file_bytes = 0;
  int64_t ignored = 0;  // files and directories left out by the patterns
};

// Walks `dir`. NotFound when it is not a directory; ResourceExhausted when the files add
// up to more than max_bytes (or entries), naming the largest directories to leave out;
// InvalidArgument for a symlink that points out of the tree or a special file.
Result<TreePlan> PlanTree(const std::string& dir, const PackOptions& options);

// Receives the archive in pieces of at most 1 MiB; an error stops the writing.
using ByteSink = std::function<Status(std::string_view)>;

// Writes the archive of `plan` to `sink`. FailedPrecondition when a file changed size or
// vanished since PlanTree (the tree changed while it was packed).
Status WriteTreeArchive(const TreePlan& plan, const ByteSink& sink);

}  // namespace farm::archives

#endif  // FARM_COMMON_ARCHIVE_TREE_PACKER_H_
