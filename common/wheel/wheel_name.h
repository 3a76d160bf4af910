// Wheel file names (PEP 427) and the name/version normalisations needed to compare them
// with a wheel's METADATA. Pure functions; safe from any thread.
#ifndef FARM_COMMON_WHEEL_WHEEL_NAME_H_
#define FARM_COMMON_WHEEL_WHEEL_NAME_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

// The parts of "{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl".
struct WheelFilename {
  std::string name;         // as written in the file name: "flash_attn"
  std::string version;      // full version incl. local label: "2.8.3+cu12torch2.9"
  std::string local_label;  // the part after '+', or ""
  std::string build_tag;    // "" when absent
  std::string python_tag;   // as written, possibly dot-compressed: "py2.py3"
  std::string abi_tag;
  std::string platform_tag;
  std::vector<std::string> python_tags;  // "py2.py3" split on '.'
  std::vector<std::string> abi_tags;
  std::vector<std::string> platform_tags;

  // Every python-abi-platform combination, sorted: {"cp312-cp312-linux_x86_64"}.
  std::vector<std::string> ExpandedTags() const;
  // True when every platform tag is "any" (a pure-Python wheel).
  bool IsPure() const;
};

// Parses the last path component of `path`. On success returns the parts; InvalidArgument
// naming the offending part otherwise (wrong suffix, wrong number of '-' separated parts,
// characters PEP 427 does not allow, build tag not starting with a digit, empty tag).
Result<WheelFilename> ParseWheelFilename(std::string_view path);

// PEP 503 normalisation, `re.sub(r"[-_.]+", "-", name).lower()`: lowercase, each run of
// '-', '_' and '.' becomes one '-' (a leading or trailing run too: "_x" is "-x"). The
// farm's one normaliser of project names, and of extra names (PEP 685).
std::string NormalizeProjectName(std::string_view name);

// The comparison form of a version: lowercase, a leading 'v' before a digit dropped, '-'
// and '_' in the local label turned into '.'. Enough to compare METADATA with a file name
// without a full PEP 440 parser; "2.2.0" and "2.2.0+cu128" stay different.
std::string NormalizeVersion(std::string_view version);

// The CPU architecture of a platform tag: "x86_64" for "linux_x86_64",
// "manylinux_2_28_x86_64", "manylinux2014_x86_64" and "musllinux_1_2_x86_64"; "any" for
// "any"; the tag itself when no known prefix matches.
std::string PlatformArch(std::string_view platform_tag);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_WHEEL_NAME_H_
