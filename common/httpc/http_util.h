// Small helpers shared by the publishing clients: URL and Base64 encoding, turning an
// HTTP error response into a redacted Status, and reading JSON fields without throwing.
// All functions are pure and thread-safe.
#ifndef FARM_COMMON_HTTPC_HTTP_UTIL_H_
#define FARM_COMMON_HTTPC_HTTP_UTIL_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/httpc/http_client.h"
#include "common/status.h"

namespace farm::httpc {

// Percent-encodes everything but RFC 3986 unreserved characters (so "/" becomes %2F).
std::string PercentEncode(std::string_view text);

// Percent-encodes each "/"-separated segment of `path`, keeping the slashes.
std::string EncodePath(std::string_view path);

std::string Base64Encode(std::string_view bytes);

// Returns `url` without its query string: presigned URLs carry credentials there.
std::string UrlForLog(std::string_view url);

// Returns true for 429, and for a 403 that carries rate-limit evidence (remaining = 0,
// retry-after, or "rate limit" in the body): GitHub answers secondary limits with either.
bool IsRateLimited(const HttpResponse& response);

// Maps an HTTP status to the Status code the outbox reacts to: 401 Unauthenticated,
// 403 PermissionDenied, 404 NotFound, 409/422 AlreadyExists, 412 FailedPrecondition,
// 429 and rate-limited 403 ResourceExhausted, 5xx Unavailable, other 4xx InvalidArgument.
StatusCode CodeForHttpStatus(int status);

// Returns a Status for a failed exchange: "<what>: HTTP <status>: <server message>",
// with the message taken from a JSON "message"/"error" field when present, truncated,
// and passed through farm::log::Redact.
Status HttpError(std::string_view what, const HttpResponse& response);

// Parses `text` as JSON without throwing; InvalidArgument naming `what` on failure.
Result<boost::json::value> ParseJson(std::string_view text, std::string_view what);

// The body of `response` as a JSON object; InvalidArgument naming `what` otherwise.
Result<boost::json::object> ParseObject(const HttpResponse& response, std::string_view what);

// Field readers that return a default instead of throwing on a missing or mistyped key.
std::string JsonString(const boost::json::object& o, std::string_view key);
int64_t JsonInt(const boost::json::object& o, std::string_view key, int64_t fallback = 0);
bool JsonBool(const boost::json::object& o, std::string_view key, bool fallback = false);

// Returns the rel="next" target of an RFC 8288 Link header, or "" when there is none.
std::string NextLink(const HttpHeaders& headers);

}  // namespace farm::httpc

#endif  // FARM_COMMON_HTTPC_HTTP_UTIL_H_
