// What the dependency specifiers a wheel declares in METADATA's Requires-Dist (PEP 508)
// mean for one environment: the environment markers evaluated for one interpreter and
// platform, and whether a version satisfies a specifier, so the farm can tell which
// requirements of a wheel apply to the environment it provisions. Their syntax is read by
// common/wheel/metadata/dependency.h (ParseDependency, re-exported here for these
// functions' users). Versions and specifiers are release_version.h's (PEP 440 without
// epochs). Every input is hostile: sizes are bounded and anything outside the grammar is
// InvalidArgument. Pure functions; safe from any thread.
#ifndef FARM_COMMON_UPSTREAM_PEP508_H_
#define FARM_COMMON_UPSTREAM_PEP508_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/upstream/release_version.h"
#include "common/wheel/metadata/dependency.h"

namespace farm::upstream {

using wheel::DependencySpec;
using wheel::ParseDependency;

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
