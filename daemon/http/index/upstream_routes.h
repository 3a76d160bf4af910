// farmd's pull-through routes (docs/environments.md, "farmd's pull-through cache"): the
// upstreams workers provision from, served from farmd's blob store, each file downloaded
// upstream once for the whole fleet.
//
//   /upstream/pypi/<index>/simple/<project>/   a PEP 691 (JSON, when the Accept header asks
//                                              for it) or PEP 503 project page, its file
//                                              URLs pointing at /upstream/files/
//   /upstream/files/<sha256>/<filename>        a file a page listed, from the blob store
//   /upstream/tree/<name>/<path>               a redist or CPython archive folder: manifests
//                                              and SHA256SUMS pass through, archives come
//                                              from the blob store once a manifest listed them
// Every path segment is checked before it reaches the cache. Thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_UPSTREAM_ROUTES_H_
#define FARM_DAEMON_HTTP_INDEX_UPSTREAM_ROUTES_H_

#include <optional>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

inline constexpr char kUpstreamPrefix[] = "/upstream/";

// The answer to a request under kUpstreamPrefix; nullopt for any other path. 404 when
// farmd serves no upstreams (deps.mirror null).
std::optional<Response> HandleUpstream(const DashboardDeps& deps, const Request& req);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_UPSTREAM_ROUTES_H_
