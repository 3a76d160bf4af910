// Plain request and response values exchanged between the socket layer (dashboard.cc) and
// the pure handlers. Handlers never see Beast or sockets, so they are unit-tested by
// building a Request and inspecting the Response. Values only; no thread-safety concerns.
#ifndef FARM_DAEMON_HTTP_SERVER_HTTP_MESSAGE_H_
#define FARM_DAEMON_HTTP_SERVER_HTTP_MESSAGE_H_

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace farm::http {

struct Request {
  std::string method = "GET";  // upper case
  std::string path;            // percent-decoded path, without the query
  std::map<std::string, std::string> query;
  std::string accept;         // Accept header, "" when absent
  std::string authorization;  // Authorization header, "" when absent
  std::string last_event_id;  // Last-Event-ID header (server-sent events reconnect)
  std::string host;           // Host header, "" when absent
  std::string cache_control;  // Cache-Control header, "" when absent
  std::string user_agent;     // User-Agent header (at most 256 bytes), "" when absent
  bool secure = false;        // the connection is TLS: URLs built from `host` are https
  std::string peer;           // the client's address ("127.0.0.1"), "" when unknown
  std::string body;
};

// What the socket layer should do after sending the head of a response.
enum class BodyKind {
  kString,  // `body` is the whole body
  kFile,    // stream the file at `file_path` (e.g. a wheel from the blob store)
  kEvents,  // server-sent events: `body` is the first chunk, then LogStream polls
};

struct Response {
  int status = 200;
  // The status line's reason phrase; "" for the standard one ("Not Found"). Printable
  // ASCII only (ReasonPhrase makes it so): pip prints it when a file download fails.
  std::string reason;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
  BodyKind kind = BodyKind::kString;
  std::string file_path;
  // For kEvents: the job and attempt whose log is followed, and the last seq sent.
  int64_t sse_job_id = 0;
  int sse_attempt = 0;
  int64_t sse_after_seq = 0;
  // Kept alive until the answer is sent (a pull-through blob pinned against eviction).
  std::shared_ptr<const void> hold;
};

// Receives an answer made later, on another thread (the pull-through routes, whose
// upstream requests never run on the server's threads). Called exactly once.
using Reply = std::function<void(Response)>;

// Parses "a=1&b=x%20y" into a map (later keys win); never fails.
std::map<std::string, std::string> ParseQuery(std::string_view query);
// Decodes %XX and (in queries) '+'; malformed escapes are kept literally.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// Builds a Request from a raw target ("/api/v1/builds?limit=5").
Request MakeRequest(std::string method, std::string_view target);

Response TextResponse(int status, std::string body);
Response JsonResponse(int status, std::string json);
// 200 with `v` serialised as JSON.
Response JsonOk(const boost::json::value& v);
Response HtmlResponse(int status, std::string html);
// {"error": {"code": "NOT_FOUND", "message": ...}} with the HTTP status matching `status`.
Response ErrorResponse(const Status& status);
Response Redirect(int status, const std::string& location);
// Maps a Status code to an HTTP status (NotFound -> 404, PermissionDenied -> 403, ...).
int HttpStatusFor(StatusCode code);

// `text` as a status line's reason phrase: printable ASCII (anything else becomes '?'), at
// most 512 bytes.
std::string ReasonPhrase(std::string_view text);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

// True for GET and HEAD, the methods that only read.
bool IsRead(const Request& req);

// 405 naming the methods the path allows in its Allow header ("GET, HEAD").
Response MethodNotAllowed(const char* allow);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_HTTP_MESSAGE_H_
