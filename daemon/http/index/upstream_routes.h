// farmd's pull-through routes (docs/environments.md, "farmd's pull-through cache"): the
// upstreams workers provision from, served from farmd's blob store, each file downloaded
// upstream once for the whole fleet.
//
//   /upstream/pypi/<index>/simple/<project>/        a PEP 691 (JSON, when the Accept
//                                                   header asks for it) or PEP 503 project
//                                                   page, its file URLs pointing at
//                                                   /upstream/files/<index>/; HTML for pip
//                                                   22.2 to 23.0 (its User-Agent), which
//                                                   reads PEP 658 metadata only there
//   /upstream/files/<index>/<sha256>/<filename>     a file <index> listed under that name,
//                                                   from the blob store
//   /upstream/files/<index>/<sha256>/<filename>.metadata   its PEP 658 metadata file
//   /upstream/tree/<name>/<path>                    a redist or CPython archive folder:
//                                                   manifests and SHA256SUMS pass through,
//                                                   archives come from the blob store once
//                                                   a manifest listed them
//
// Who may do what: reading follows the dashboard's rule (anyone unless --private-read:
// then a viewer's, submitter's, admin's or worker's token); making farmd download a file
// that is not stored yet needs a worker's or an admin's token, or farmd's internal secret
// (mirror/internal_access.h), unless the cache allows anonymous pulls. A token travels
// as a bearer token or as the password of HTTP Basic (what pip sends from an index URL's
// userinfo). Every path segment is checked before it reaches the cache; no answer or log
// line holds the credentials of an upstream URL.
//
// Answers never wait on an HTTP thread: HandleUpstreamAsync answers at once what needs
// no upstream request and the rest from the cache's own threads. Thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_UPSTREAM_ROUTES_H_
#define FARM_DAEMON_HTTP_INDEX_UPSTREAM_ROUTES_H_

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

inline constexpr char kUpstreamPrefix[] = "/upstream/";

// Whether `req` is one of these routes' (its path starts with kUpstreamPrefix).
bool IsUpstreamRequest(const Request& req);

// Answers a request under kUpstreamPrefix through `reply`, exactly once, on this thread or
// a cache thread. `public_read` is the dashboard's. 404 when farmd serves no upstreams
// (deps.mirror null).
void HandleUpstreamAsync(const DashboardDeps& deps, bool public_read, const Request& req,
                         Reply reply);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_UPSTREAM_ROUTES_H_
