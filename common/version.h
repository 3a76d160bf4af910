// The farm's version, the same for farmd, farm-worker and farmctl: the project version
// from CMake and, for a build from a git checkout, the commit it was configured at.
#ifndef FARM_COMMON_VERSION_H_
#define FARM_COMMON_VERSION_H_

namespace farm {

// "0.1.0 (git 77df8e9)" or "0.1.0".
const char* FarmVersion();

}  // namespace farm

#endif  // FARM_COMMON_VERSION_H_
