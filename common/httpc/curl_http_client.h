// CurlHttpClient: the real HttpClient over libcurl (one easy handle per request, so Send
// is safe to call from several threads at once). Bodies are streamed through a read
// callback with an explicit Content-Length, never loaded into memory when they come from
// a file. Custom Authorization headers are not forwarded across hosts on redirects
// (libcurl's default), which keeps tokens away from storage and CDN hosts.
#ifndef FARM_COMMON_HTTPC_CURL_HTTP_CLIENT_H_
#define FARM_COMMON_HTTPC_CURL_HTTP_CLIENT_H_

#include "common/httpc/http_client.h"

namespace farm::httpc {

class CurlHttpClient final : public HttpClient {
 public:
  // Calls curl_global_init once per process (thread-safe).
  CurlHttpClient();
  Result<HttpResponse> Send(const HttpRequest& request) override;
};

}  // namespace farm::httpc

#endif  // FARM_COMMON_HTTPC_CURL_HTTP_CLIENT_H_
