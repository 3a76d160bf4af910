// MakeIndex: `farmctl index make DIR`, a folder of wheels (and sdists) made into a package
// index that any static file server serves (docs/first-index.md), as a farm's first
// upstream index (farmd --upstream-index NAME=http://HOST:PORT/simple/):
//
//   DIR/simple/index.html, index.json     the projects (PEP 503 root, PEP 691)
//   DIR/simple/<project>/index.html       its files: PEP 503 links with #sha256=, the wheel's
//                                         Requires-Python, and its metadata file's sha256 under
//                                         both data-core-metadata (PEP 714) and
//                                         data-dist-info-metadata (PEP 658: pip 23.0 reads
//                                         only this one)
//   DIR/simple/<project>/index.json       the same as PEP 691 JSON (api 1.1)
//   DIR/<wheel>.metadata                  the wheel's METADATA (PEP 658), next to it
//
// Links are relative (../../<file>), so the folder can be served from any path. The files
// stay where they are; simple/ is written aside and swapped in whole (ExportDir). Names are
// checked before use: only regular files (no link followed) whose names parse as a wheel
// or an sdist are listed, the rest are named in `skipped`. Not thread-safe.
#ifndef FARM_CLI_INDEX_MAKE_INDEX_H_
#define FARM_CLI_INDEX_MAKE_INDEX_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace farm::cli::index {

struct MadeIndex {
  std::string simple_dir;  // DIR/simple, absolute
  int projects = 0;
  int files = 0;                     // wheels and sdists listed
  int wheels_with_metadata = 0;      // wheels whose METADATA was written beside them
  std::vector<std::string> skipped;  // "name: why"
};

// Indexes the files of `dir`. `force` replaces a DIR/simple this command did not write.
// InvalidArgument for a `dir` that is not a directory or holds no wheel or sdist, or a
// wheel that is not a readable zip with one METADATA; what ExportDir::Open refuses.
Result<MadeIndex> MakeIndex(const std::string& dir, bool force);

}  // namespace farm::cli::index

#endif  // FARM_CLI_INDEX_MAKE_INDEX_H_
