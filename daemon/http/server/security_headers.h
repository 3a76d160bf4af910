// The headers every answer of the dashboard's server carries, whatever its route (page,
// API, index, metrics, error): the page's buttons act with a token kept in the browser,
// so no other site may frame it (clickjacking), no injected markup may run script or load
// anything from elsewhere, and no response is sniffed into another type.
#ifndef FARM_DAEMON_HTTP_SERVER_SECURITY_HEADERS_H_
#define FARM_DAEMON_HTTP_SERVER_SECURITY_HEADERS_H_

#include <string>
#include <utility>
#include <vector>

namespace farm::http {

// The dashboard's Content-Security-Policy: scripts, styles and requests only from farmd
// itself, no inline script or style, no plugins, never framed.
extern const char kContentSecurityPolicy[];

// Name and value of each header, in the order they are sent.
const std::vector<std::pair<std::string, std::string>>& SecurityHeaders();

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_SECURITY_HEADERS_H_
