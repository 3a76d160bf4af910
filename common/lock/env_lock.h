// The lock of one cell's environment: every distribution its Python gets, each as the one
// wheel file (name, URL, sha256, size) chosen for the cell's Python and platform, in the
// standard form of PEP 751 (`pylock.toml`). farmd resolves it once per distinct
// environment with pip's resolver (daemon/lock/), stores it with the build and puts its
// digest in the build key; the worker installs exactly it, hash-checked, without resolving
// (worker/env/). A recipe may bring its own (`environment.lock: FILE`).
//
// The text is the PEP 751 form with the farm's own fields under [tool.farm]: the index
// the farm names the packages' index by ("cu130") and the requirements that were resolved.
// Serialising is deterministic (packages sorted by normalized name), so the digest of a
// lock is the digest of its text. Parsing treats the text as hostile: bounded sizes and
// counts, wheels only (no sdists, VCS or directories), http(s) URLs, sha256 digests.
// Pure functions; thread-safe.
#ifndef FARM_COMMON_LOCK_ENV_LOCK_H_
#define FARM_COMMON_LOCK_ENV_LOCK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::lock {

// The largest lock text read (a torch environment is about 40 packages, 20 KB).
inline constexpr int64_t kMaxLockBytes = int64_t{4} << 20;
inline constexpr size_t kMaxPackages = 4096;

struct LockedPackage {
  std::string name;      // normalized (PEP 503): "nvidia-cublas"
  std::string version;   // "13.1.0.3", local label included: "2.11.0+cu130"
  std::string index;     // the index URL it was found on: "https://download.pytorch.org/whl/cu130/"
  std::string filename;  // the wheel: "torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
  std::string url;       // where the index had it (upstream, never the farm's own address)
  std::string sha256;    // lowercase hex
  int64_t size = -1;     // bytes; -1 when the index did not say
};

struct EnvLock {
  std::string python;      // "3.12": the Python the lock was resolved for
  std::string platform;    // "linux_x86_64"
  std::string index_name;  // the farm's name of the packages' index ("cu130"); "" for none
  std::vector<std::string> requirements;  // what was resolved, as given ("setuptools>=64")
  std::vector<LockedPackage> packages;    // sorted by name
};

// The PEP 751 text of `lock` (packages sorted; deterministic).
std::string ToToml(const EnvLock& lock);

// Parses a pylock.toml. InvalidArgument naming the first problem (with its TOML line where
// the parser gives one): not TOML, lock-version other than 1.x, a package that is not one
// wheel with a sha256, a URL that is not http(s), a wheel whose name disagrees with the
// package, two packages of one name, limits exceeded. A lock with several wheels for a
// package (a lock for many platforms) is refused: a cell's lock names the one it installs.
Result<EnvLock> ParseToml(const std::string& text);

// The sha256 of ToToml(lock): what the build key and the store name a lock by.
std::string Digest(const EnvLock& lock);

struct LockSummary {
  int64_t packages = 0;
  int64_t bytes = 0;          // the wheels' sizes added up
  int64_t unknown_sizes = 0;  // wheels whose size the index did not give
};
LockSummary Summarize(const EnvLock& lock);

// "41 packages, 4.6 GB" (", 2 of unknown size" when some are).
std::string DescribeSummary(const LockSummary& summary);

// What changed from `before` to `after`, by package name, sorted: "torch 2.11.0 -> 2.11.1",
// "+ cuda-bindings 13.3.1" (added), "- nvidia-nvtx 13.0.85" (gone). Empty when the same
// packages are at the same versions (a file that changed under one version is listed as
// "torch 2.11.0 (another file)").
std::vector<std::string> Diff(const EnvLock& before, const EnvLock& after);

// The package named `name` (any spelling), or null.
const LockedPackage* Find(const EnvLock& lock, const std::string& name);

}  // namespace farm::lock

#endif  // FARM_COMMON_LOCK_ENV_LOCK_H_
