// Honest runtime requirements for built wheels: a C++/CUDA extension built against torch
// X.Y links symbols that change between minor versions, so its wheel must say which torch
// it needs (`Requires-Dist: torch==X.Y.*`; `torch>=F` for a build against torch's stable
// ABI with floor F), or pip installs it next to any torch and it fails at import with
// `undefined symbol`. These functions write such a requirement into a wheel's METADATA,
// replacing what the package declared for that project, and rewrite RECORD to match
// (wheel_rewrite.h: every other byte kept, output deterministic).
//
// Pure functions apart from PinRequirement, which reads and writes files; all are safe
// from any thread.
#ifndef FARM_COMMON_WHEEL_METADATA_REQUIRES_DIST_H_
#define FARM_COMMON_WHEEL_METADATA_REQUIRES_DIST_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

// A requirement the farm writes: a project name and a version specifier, no extras, no
// marker, no URL ("torch==2.11.*", "torch>=2.9", "torch==2.11.0,!=2.11.1").
struct PinSpec {
  std::string name;       // as written: "torch"
  std::string specifier;  // "==2.11.*"
  std::string ToString() const { return name + specifier; }
};

// Parses `text` as NAME followed by one or more comma-separated clauses OP VERSION, OP one
// of == != >= <= ~= > < === and VERSION made of [A-Za-z0-9.*+!_-]. InvalidArgument for
// anything else (extras, markers, URLs, spaces inside a clause, control characters).
Result<PinSpec> ParsePinSpec(std::string_view text);

// The requirement of a wheel built against the torch whose version is `torch_version`
// ("2.11.0+cu130"): "torch==2.11.*" (the minor version: extensions break between minors);
// "torch==2.11.0" when `exact`, and for a pre-release or development build
// ("2.10.0.dev20250801+cu128" gives "torch==2.10.0.dev20250801": a nightly's ABI moves
// daily). The local label is dropped: which CUDA build of torch is installed is the
// index's business, and "==2.11.0" matches "2.11.0+cu130". InvalidArgument when the
// version does not start with MAJOR.MINOR.
Result<std::string> TorchRequirementFor(std::string_view torch_version, bool exact);

// "torch>=2.9": the requirement of a wheel built against torch's stable ABI with `floor`
// ("2.9"). InvalidArgument unless `floor` is MAJOR.MINOR.
Result<std::string> TorchFloorRequirement(std::string_view floor);

// The Requires-Dist values among `requires_dist` (WheelReport::requires_dist) whose project
// is `project` (compared after PEP 503 normalisation), in order.
std::vector<std::string> RequiresDistFor(const std::vector<std::string>& requires_dist,
                                         std::string_view project);

// `metadata` with the requirement `pin` in place of what it declared for pin.name:
//   - every Requires-Dist of that project without an `extra` marker is removed and one
//     `Requires-Dist: <name>[<their extras>]<specifier>` takes the place of the first (or
//     follows the last Requires-Dist, or ends the header block, when there was none); its
//     environment markers are dropped, because the built extension needs this torch
//     wherever the wheel installs;
//   - rows with an `extra` marker (needed only with that extra) are kept as they are, and
//     an installer intersects them with the pin;
//   - every other byte (other headers, line endings, the description body) is kept.
// InvalidArgument for a METADATA that is not UTF-8, larger than kMaxDistInfoBytes, with a
// Metadata-Version before 1.2 (no Requires-Dist), with more than one Name, Version or
// Metadata-Version header (an installer and the farm could read different ones), or whose
// rows for the project have malformed extras.
Result<std::string> SetRequiresDist(std::string_view metadata, const PinSpec& pin);

struct PinResult {
  std::string path;         // the wheel carrying the requirement
  std::string filename;     // its file name (the same as the input's: the version is unchanged)
  std::string requirement;  // as written into METADATA
  bool rewritten = false;   // false: METADATA already said exactly this
};

// Writes the wheel at `in_path` with `requirement` (ParsePinSpec) in its METADATA into
// `out_dir` (which must exist) under the same file name; `out_dir` may be the input's own
// directory, whose file is then replaced atomically. When METADATA already says exactly
// this, returns `in_path` unchanged. Fails like SetRequiresDist, ReadDistInfoText and
// RewriteRecord (wheel_rewrite.h: hostile archives and RECORDs naming paths outside the
// wheel are refused).
Result<PinResult> PinRequirement(const std::string& in_path, const std::string& requirement,
                                 const std::string& out_dir);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_METADATA_REQUIRES_DIST_H_
