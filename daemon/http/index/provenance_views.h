// The farm's provenance over HTTP (docs/provenance.md): the public key set at
// /api/v1/provenance/keys, and for each listed wheel its statements as a PEP 740 provenance
// object (<file URL>.provenance, linked from the PEP 691 JSON) and as DSSE envelope lines
// (<file URL>.intoto.jsonl, the same file the releases carry).
#ifndef FARM_DAEMON_HTTP_INDEX_PROVENANCE_VIEWS_H_
#define FARM_DAEMON_HTTP_INDEX_PROVENANCE_VIEWS_H_

#include <string>
#include <string_view>

#include "daemon/http/index/index_catalog.h"
#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

inline constexpr char kKeysPath[] = "/api/v1/provenance/keys";
inline constexpr char kPep740Suffix[] = ".provenance";
inline constexpr char kJsonlSuffix[] = ".intoto.jsonl";

// The key set; 404 when farmd keeps no provenance.
Response ProvenanceKeysResponse(const DashboardDeps& deps);

// The key set as Base64 of its JSON, for the install script to verify with; "" when
// farmd keeps no provenance.
std::string InstallScriptKeys(const DashboardDeps& deps);

// /api/v1/projects/<name>: the farm's record of project `name` (any spelling; PEP 503
// normalised here), which `farmctl verify` checks a build statement's owner against:
// {"name": "attn-example", "owner": "alice", "claimed": RFC 3339, "updated": RFC 3339};
// 404 when nobody owns the name.
Response ProjectOwnerResponse(const DashboardDeps& deps, std::string_view name);

// The statements of `file` as a PEP 740 object (`pep740`) or as envelope lines; 404 when
// farmd signed none for it.
Response ProvenanceFileResponse(const DashboardDeps& deps, const IndexFile& file, bool pep740);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_PROVENANCE_VIEWS_H_
