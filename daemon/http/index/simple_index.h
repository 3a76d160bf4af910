// The package index served next to the dashboard: PEP 503 HTML and PEP 691 JSON pages
// chosen by the Accept header, PEP 658/714 metadata files, and wheel downloads from the
// blob store. One view with every listed wheel (/simple/) and one per variant
// (/<variant>/simple/, e.g. /cu130/simple/ or /cu128-torch2.8/simple/). Pure handlers over
// an IndexCatalog; thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_SIMPLE_INDEX_H_
#define FARM_DAEMON_HTTP_INDEX_SIMPLE_INDEX_H_

#include <optional>
#include <string>

#include "daemon/http/index/index_catalog.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

inline constexpr char kJsonV1[] = "application/vnd.pypi.simple.v1+json";
inline constexpr char kHtmlV1[] = "application/vnd.pypi.simple.v1+html";

struct Negotiated {
  bool acceptable = false;
  bool json = false;
  std::string content_type;  // what the response declares
};

// Picks the representation for an Accept header (PEP 691): the highest q among the v1 and
// latest JSON/HTML types, text/html and wildcards; JSON wins ties. "" means text/html.
Negotiated NegotiateIndexFormat(std::string_view accept);

// An index page: `body` as `n` declares it, varying on Accept.
Response IndexPage(const Negotiated& n, std::string body);

// Answers index paths (/simple..., /<variant>/simple..., /files/...); nullopt for any other
// path so the router can try its other routes.
std::optional<Response> HandleIndex(IndexCatalog& catalog, const Request& req);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_SIMPLE_INDEX_H_
