// Dependency specifiers as wheels declare them in METADATA's Requires-Dist (PEP 508):
//
//   name [extras] specifier ; marker        e.g.
//   triton==3.4.0; platform_system == "Linux" and platform_machine == "x86_64"
//   cuda-toolkit[cublas,cudart]==13.0.2; platform_system == "Linux"
//   pytest (>=4.6) ; extra == 'develop'      (the older parenthesized form)
//
// and the environment markers evaluated for one interpreter and platform, so the farm can
// tell which requirements of a wheel apply to the environment it provisions. Versions and
// specifiers are release_version.h's (PEP 440 without epochs). URL requirements
// (`name @ url`) do not parse: nothing the farm installs may name one. Every input is
// hostile: sizes are bounded and anything outside the grammar is InvalidArgument.
// Pure functions; safe from any thread.
#ifndef FARM_COMMON_UPSTREAM_PEP508_H_
#define FARM_COMMON_UPSTREAM_PEP508_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/upstream/release_version.h"

namespace farm::upstream {

struct DependencySpec {
  std::string name;                 // as written
  std::vector<std::string> extras;  // normalized (PEP 685), sorted
  std::string specifier;            // ">=1.13.3", "==13.1.0.3.*"; "" for any version
  std::string marker;               // the text after ';', "" for none
};

// Parses one Requires-Dist value.
Result<DependencySpec> ParseDependency(std::string_view text);

// Marker variables (python_version, python_full_version, platform_system,
// platform_machine, sys_platform, os_name, implementation_name, ...). A variable missing
// from the map is "" (so `platform_release` comparisons are false rather than errors).
using MarkerEnv = std::map<std::string, std::string>;

// The environment of CPython `python_version` ("3.12" or "3.12.3") on Linux `machine`
// ("x86_64"), as `packaging.markers.default_environment()` reports it there (platform
// release and version left empty: a build host's kernel says nothing about the wheel).
MarkerEnv LinuxCpythonEnv(const std::string& python_version, const std::string& machine);

// Evaluates `marker` in `env` with `extra` set to `extra` ("" for none). Comparisons use
// PEP 440 versions when both sides parse as versions and the operator is a version one,
// else string comparison; `in` / `not in` test substrings; `extra` compares normalized
// names. InvalidArgument for a marker outside PEP 508's grammar or nested too deeply.
Result<bool> EvaluateMarker(std::string_view marker, const MarkerEnv& env,
                            const std::string& extra = "");

// Whether `version` satisfies `specifier` ("" matches everything); InvalidArgument for a
// specifier or version release_version.h cannot read (=== among them).
Result<bool> SpecifierMatches(const std::string& specifier, const std::string& version);

}  // namespace farm::upstream

#endif  // FARM_COMMON_UPSTREAM_PEP508_H_
