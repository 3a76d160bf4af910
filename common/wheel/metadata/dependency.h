// Dependency specifiers (PEP 508) as a wheel's METADATA states them in Requires-Dist, and
// as the farm reads them everywhere (the provisioner's pin checks, farmd's torch views, the
// torch pin the worker writes):
//
//   name [extras] specifier ; marker        e.g.
//   triton==3.4.0; platform_system == "Linux" and platform_machine == "x86_64"
//   cuda-toolkit[cublas,cudart]==13.0.2; platform_system == "Linux"
//   pytest (>=4.6) ; extra == 'develop'      (the older parenthesized form)
//
// This is the one reader of their syntax. What a specifier or a marker means (PEP 440
// versions, marker evaluation) is common/upstream/pep508.h's. Every input is hostile: sizes
// are bounded and anything outside the grammar is InvalidArgument. Pure functions; safe
// from any thread.
#ifndef FARM_COMMON_WHEEL_METADATA_DEPENDENCY_H_
#define FARM_COMMON_WHEEL_METADATA_DEPENDENCY_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

// The longest dependency specifier or marker read.
inline constexpr size_t kMaxDependencyBytes = 2000;

struct DependencySpec {
  std::string name;                 // as written
  std::vector<std::string> extras;  // normalized (PEP 685), sorted
  std::string specifier;            // ">=1.13.3", "==13.1.0.3.*", parentheses dropped; "" for any
  std::string marker;               // the text after ';', "" for none
};

// The name a dependency specifier starts with (after white space): the run of letters,
// digits, '-', '_' and '.'; "" when it starts with none. For telling whose a row is
// without judging the rest of it.
std::string_view DependencyName(std::string_view text);

// The name, extras and marker of `text`, and the text between them (the version part, as
// written and trimmed) in `specifier`, which is not checked: for editing rows that may
// hold anything there. The name is as DependencyName reads it ("" when none).
// InvalidArgument only for an extras list that is not closed before the marker or holds
// something other than names.
Result<DependencySpec> ParseDependencyHead(std::string_view text);

// Parses one Requires-Dist value. The name must start and end with a letter or digit, and
// the version part be a specifier of PEP 440 characters (checked by shape: whether its
// versions parse is pep508.h's concern). URL requirements (`name @ URL`) do not parse:
// nothing the farm reads or installs may name one. InvalidArgument for anything else, and
// for a text longer than kMaxDependencyBytes.
Result<DependencySpec> ParseDependency(std::string_view text);

// Whether a marker (the text after ';') uses the `extra` variable outside quoted values:
// such a row applies only when that extra is asked for.
bool MarkerNamesExtra(std::string_view marker);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_METADATA_DEPENDENCY_H_
