// Wheel-variant metadata in the form of the WheelNext proposals (PEP 817 / PEP 825 drafts):
// for each project and public version, a {name}-{version}-variants.json that lists every
// wheel of that version as a variant label (its local version label, e.g.
// "cu130.sm90.sm120a") with its properties in the "nvidia" namespace:
// cuda_version_lower_bound (the cell's CUDA) and sm_arch ("90_real" per SASS image,
// "120_virtual" per PTX image; the a/f suffix has no property of its own). Served at
// /files/variants/<project>/<file>; the wheels keep pip-compatible names (the label is
// in the local version, not a PEP 825 file-name suffix, which pip rejects). Pure; thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_WHEEL_VARIANTS_H_
#define FARM_DAEMON_HTTP_INDEX_WHEEL_VARIANTS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http/index/index_catalog.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// "attn_example-0.1.0-variants.json": the file name for a project's public version.
std::string VariantsFileName(const IndexFile& file);

// The torch requirement of a file ("torch==2.8.*", "" for none), from its METADATA.
using TorchRequirementLookup = std::function<std::string(const IndexFile&)>;

// The variants document of `project` at public `version` over `files`; nullopt when no
// file matches. With `torch_of`, a variant whose wheel requires torch also carries the
// property `torch :: requires_dist :: <requirement>`.
std::optional<std::string> VariantsJson(const std::vector<IndexFile>& files,
                                        const std::string& project, const std::string& version,
                                        const TorchRequirementLookup& torch_of = nullptr);

// Answers GET /files/variants/<project>/<file name>.
Response HandleVariantsFile(IndexCatalog& catalog, std::string_view rest);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_WHEEL_VARIANTS_H_
