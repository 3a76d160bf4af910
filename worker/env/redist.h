// NVIDIA's redistributable CUDA archives: the redistrib_<version>.json manifest (per
// component and platform: relative_path, sha256, md5, size) and the folder listing that
// names the manifests. Parsing is strict about what it uses: a relative_path must stay
// under the redist folder, a sha256 must be one. Pure functions; safe from any thread.
#ifndef FARM_WORKER_ENV_REDIST_H_
#define FARM_WORKER_ENV_REDIST_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::env {

struct RedistArchive {
  std::string component;      // "cuda_nvcc"
  std::string version;        // the component's own version
  std::string relative_path;  // "cuda_nvcc/linux-x86_64/...-archive.tar.xz"
  std::string sha256;
  int64_t size = -1;
};

struct RedistManifest {
  std::string release_label;  // "13.0.2"
  // component -> platform -> archive
  std::map<std::string, std::map<std::string, RedistArchive>> components;
};

// Parses a manifest. InvalidArgument for malformed JSON, a missing release_label, or an
// archive entry with a bad relative_path or sha256; sizes may be strings (as NVIDIA
// writes them) or numbers.
Result<RedistManifest> ParseRedistManifest(const std::string& text);

// The manifest versions ("13.0.2") a folder listing links to (href="redistrib_X.json").
std::vector<std::string> ManifestVersionsInListing(const std::string& html);

// The newest of `versions` equal to `wanted` or extending it by dot-separated parts
// ("13.0" matches "13.0.2", not "13.01"); NotFound naming what exists when none does.
Result<std::string> PickManifestVersion(const std::vector<std::string>& versions,
                                        const std::string& wanted);

// The archives of `components` for `platform` ("linux-x86_64"). A component the manifest
// lacks for that platform is NotFound.
Result<std::vector<RedistArchive>> SelectArchives(const RedistManifest& manifest,
                                                  const std::vector<std::string>& components,
                                                  const std::string& platform);

// The components a build needs by default: the compiler and its front end and back end
// (nvcc, crt, nvvm), the runtime and the C++ core libraries.
const std::vector<std::string>& DefaultRedistComponents();

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_REDIST_H_
