// HTTP seam for the publishing clients: plain request/response structs and an abstract
// HttpClient. CurlHttpClient (curl_http_client.h) is the real implementation; unit tests
// substitute a scripted fake. A request body comes from a string or is streamed from a
// file (optionally a byte range of it, for multipart uploads) with an exact Content-Length.
//
// Thread-safety: HttpHeaders and the request/response structs are plain values. Every
// HttpClient implementation must allow concurrent Send() calls from several threads.
#ifndef FARM_COMMON_HTTPC_HTTP_CLIENT_H_
#define FARM_COMMON_HTTPC_HTTP_CLIENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::httpc {

// Orders header names without regard to ASCII case ("ETag" == "etag").
struct CaseInsensitiveLess {
  bool operator()(const std::string& a, const std::string& b) const;
};

// Header names are case-insensitive; a repeated response header is joined with ", ".
class HttpHeaders {
 public:
  void Set(const std::string& name, const std::string& value) { map_[name] = value; }
  // Adds `value`, joining with an existing value of the same name.
  void Append(const std::string& name, const std::string& value);
  bool Has(const std::string& name) const { return map_.count(name) > 0; }
  // Returns the value or std::nullopt when absent.
  std::optional<std::string> Get(const std::string& name) const;
  // Returns the value or `fallback` when absent.
  std::string GetOr(const std::string& name, const std::string& fallback) const;
  const std::map<std::string, std::string, CaseInsensitiveLess>& all() const { return map_; }

 private:
  std::map<std::string, std::string, CaseInsensitiveLess> map_;
};

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT, PATCH, DELETE
  std::string url;
  HttpHeaders headers;
  // The body is `body`, unless `body_file` is set: then `body_length` bytes (or the rest
  // of the file when -1) starting at `body_offset` are streamed from that file.
  std::string body;
  std::string body_file;
  int64_t body_offset = 0;
  int64_t body_length = -1;
  // 301/302/307/308 are followed only when set; credentials never follow to another host.
  bool follow_redirects = false;
  int64_t connect_timeout_ms = 15'000;
  // Whole-request limit, 0 for none (large uploads rely on the stall limit instead).
  int64_t timeout_ms = 120'000;
  // The transfer is aborted when it moves less than 1 KiB/s for this long.
  int64_t stall_timeout_ms = 60'000;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;
};

// Returns true for methods that change remote state (POST, PUT, PATCH, DELETE).
bool IsMutatingMethod(std::string_view method);

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Performs one exchange, without retries. On success returns the response whatever
  // its status code; a transport failure (connect, TLS, reset, timeout, unreadable body
  // file) returns Unavailable or DeadlineExceeded. A transport failure after the request
  // was sent means the outcome is unknown: callers must check remote state before
  // repeating a non-idempotent request.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

}  // namespace farm::httpc

#endif  // FARM_COMMON_HTTPC_HTTP_CLIENT_H_
