// What `farmctl cache add` may put into farmd's pull-through cache, checked before any
// byte is stored (docs/environments.md, "Preloading an offline farm"):
//
//   index-file  a wheel or sdist of a project, served on that project's page of an index
//   manifest    a redist manifest (redistrib_*.json) of a tree, served at its name there
//   archive     an archive that a preloaded manifest of the tree lists: its file name, its
//               sha256 and its size must all be the manifest's; served at the manifest's
//               relative_path
//
// Names come from the network and are hostile: no separators, no control bytes (NUL
// included), no leading '.', at most 255 bytes. Pure functions; safe from any thread.
#ifndef FARM_DAEMON_MIRROR_PRELOAD_H_
#define FARM_DAEMON_MIRROR_PRELOAD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::mirror {

enum class PreloadKind { kIndexFile, kManifest, kArchive };
// "index-file", "manifest", "archive": the names stored and shown.
std::string_view PreloadKindName(PreloadKind kind);
// The kind a name gives; InvalidArgument for any other name.
Result<PreloadKind> ParsePreloadKind(std::string_view name);

// The largest redist manifest farmd accepts (NVIDIA's are about 30 KiB).
inline constexpr int64_t kMaxManifestBytes = int64_t{8} << 20;

// A file name that names one file and nothing else: Ok, or InvalidArgument saying why.
Status CheckPlainFileName(std::string_view name);

// The PEP 503 project of a wheel ("torch-2.8.0+cu128-cp311-...whl") or sdist
// ("flash_attn-2.8.3.tar.gz", ".zip") file name; InvalidArgument for anything else.
Result<std::string> ProjectOfDistribution(std::string_view filename);

// Whether the first bytes of a distribution are its format's: a zip for .whl and .zip,
// gzip for .tar.gz. `head` holds the first bytes of the file (4 are enough).
Status CheckDistributionMagic(std::string_view filename, std::string_view head);

// Calls `visit` for every archive a redist manifest lists (relative_path, sha256, size;
// size -1 when the manifest gives none). InvalidArgument when `json` does not parse.
Status VisitManifestArchives(
    std::string_view json,
    const std::function<void(const std::string&, const std::string&, int64_t)>& visit);

// A manifest farmd may preload: it parses, lists at least one archive, and every archive
// it lists has a sha256 and a relative_path that stays inside the tree.
Status CheckManifest(std::string_view json);

struct ManifestArchive {
  std::string relative_path;  // as the manifest lists it
  std::string sha256;
  int64_t size = -1;
};

// The archive of `manifest_json` whose file name is `filename`. NotFound when the manifest
// lists none by that name.
Result<ManifestArchive> FindManifestArchive(std::string_view manifest_json,
                                            std::string_view filename);

}  // namespace farm::mirror

#endif  // FARM_DAEMON_MIRROR_PRELOAD_H_
