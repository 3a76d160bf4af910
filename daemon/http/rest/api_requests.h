// /api/v1/requests (docs/requests.md): wheel requests from the install script, the
// dashboard's form and any HTTP client, over the requests use case
// (requests/requests.h), which the gRPC API calls too.
//   POST /api/v1/requests              file one: a JSON object of the request's fields;
//                                      with a token, as its principal; without one, as the
//                                      caller's address (refused unless the farm takes
//                                      anonymous requests). 201 for a new request, 200 for
//                                      one merged into an identical request.
//   GET  /api/v1/requests[?state=&before=&limit=]   newest first, with counts per state
//   GET  /api/v1/requests/{id}
//   POST /api/v1/requests/{id}/approve             (admin)
//   POST /api/v1/requests/{id}/refuse  {"reason"}  (admin)
// Thread-safe: handlers keep no state.
#ifndef FARM_DAEMON_HTTP_REST_API_REQUESTS_H_
#define FARM_DAEMON_HTTP_REST_API_REQUESTS_H_

#include <boost/json.hpp>
#include <string_view>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"
#include "daemon/store/request_store.h"

namespace farm::http {

// Routes `rest`, the path after "/api/v1/requests" ("", "/12", "/12/approve"). Reads were
// authorized by the router; writes name their caller here.
Response DispatchRequests(const DashboardDeps& deps, const Request& req, std::string_view rest);

// A request as the API and the coverage page show it.
boost::json::object RequestJson(const store::RequestRow& row);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_API_REQUESTS_H_
