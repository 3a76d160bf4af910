// The HTTP seam of the provisioner: GETs of index pages and manifests (small, in memory)
// and downloads (streamed to a sink). CurlFetcher is the real implementation; unit tests
// use a scripted fake (tests/unit/worker/env/fake_fetcher.h).
//
// Errors follow failure.h: a transport failure, a timeout or a 5xx answer is Unavailable
// (or DeadlineExceeded), 404 and 410 are NotFound, any other non-2xx answer is
// Unavailable naming the status; an HTTP error names an excerpt of its body
// (HttpErrorStatus). Only http and https URLs are fetched, redirects included; a redirect
// the fetcher's RedirectPolicy refuses is PermissionDenied. No error text holds the
// credentials of a URL (log.h RedactUrlCredentials). Implementations allow concurrent
// calls from several threads.
#ifndef FARM_COMMON_UPSTREAM_FETCHER_H_
#define FARM_COMMON_UPSTREAM_FETCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::upstream {

struct FetchedPage {
  std::string url;           // after redirects: relative links resolve against it
  std::string content_type;  // lower case, parameters dropped
  std::string body;
  std::string etag;           // the answer's ETag, "" when none
  bool not_modified = false;  // 304 to a conditional GET: body empty, the caller's copy holds
};

// Receives each block of a download in order; returning a non-OK Status stops it, and
// that Status is what Download returns.
using DownloadSink = std::function<Status(std::string_view block)>;

class Fetcher {
 public:
  virtual ~Fetcher() = default;
  // GETs `url` with Accept: `accept` (empty: none) and Cache-Control: max-age=0 (as pip
  // asks for index pages), following redirects. Fails with
  // ResourceExhausted when the body exceeds `max_bytes`.
  virtual Result<FetchedPage> GetPage(const std::string& url, const std::string& accept,
                                      int64_t max_bytes) = 0;
  // GetPage with If-None-Match: `etag` ("" sends none). A 304 answer is a page with
  // not_modified set. Fetchers without conditional requests fetch the page whole.
  virtual Result<FetchedPage> GetPageIfChanged(const std::string& url, const std::string& accept,
                                               int64_t max_bytes, const std::string& etag) {
    (void)etag;
    return GetPage(url, accept, max_bytes);
  }
  // GETs `url`, following redirects, feeding the body to `sink`.
  virtual Status Download(const std::string& url, const DownloadSink& sink) = 0;
};

// Where a fetch may be redirected. Redirects are followed one hop at a time, each checked
// here first: never to a scheme other than http(s) (file:, ftp:, gopher: ...), and, unless
// `any_host`, only to the host of the URL first asked for or one of `allowed_hosts`, so an
// upstream cannot send farmd to an address inside its network. The userinfo of the URL
// asked for is kept only on hops to that same scheme, host and port.
struct RedirectPolicy {
  bool any_host = true;
  std::set<std::string> allowed_hosts;  // lower case names or IP literals, no port
};

// A bearer token sent only to the URLs under one prefix ("http://farmd:8080/upstream/"):
// the worker's token on farmd's own pull-through routes, never to another host, another
// port or path, over another scheme, or on a hop a redirect leads elsewhere. Set may be
// called at any time (farmd's address arrives with the worker's registration).
// Thread-safe.
class ScopedBearer {
 public:
  void Set(const std::string& url_prefix, const std::string& token);
  // "Bearer <token>" for a URL under the prefix (same scheme, host and port, its path
  // starting with the prefix's, no userinfo of its own); "" for any other URL.
  std::string HeaderFor(const std::string& url) const;

 private:
  mutable std::mutex mu_;
  std::string prefix_;
  std::string token_;
};

struct CurlFetcherOptions {
  int64_t connect_timeout_ms = 15'000;
  // A transfer moving less than 1 KiB/s for this long is abandoned (Unavailable).
  int64_t stall_timeout_ms = 60'000;
  // Whole-request limit for pages; downloads rely on the stall limit.
  int64_t page_timeout_ms = 120'000;
  int max_redirects = 5;
  RedirectPolicy redirects;
  std::shared_ptr<const ScopedBearer> bearer;  // null: no Authorization header
  // Once set, transfers in progress stop at their next progress callback (Cancelled) and
  // new ones fail at once: a stopping farmd does not wait for a multi-GB download.
  std::shared_ptr<const std::atomic<bool>> cancelled;
};

// libcurl, one easy handle per call.
std::unique_ptr<Fetcher> MakeCurlFetcher(const CurlFetcherOptions& options = {});

// The Status of an HTTP error answer: "URL answered HTTP 502: <excerpt>" (the excerpt of
// its body says why: farmd's pull-through cache puts the upstream's failure there),
// NotFound for 404 and 410, Unavailable otherwise.
Status HttpErrorStatus(const std::string& url, int64_t code, std::string_view body);

// At most `max_chars` of an error body, safe to log and show: HTML tags dropped, control
// characters and runs of white space made one space, bytes outside ASCII made '?', "..."
// where it was cut.
std::string ErrorExcerpt(std::string_view body, size_t max_chars = 300);

// Whether `url` is an absolute http or https URL with a host (what the fetcher accepts).
bool IsHttpUrl(std::string_view url);

// The host of an http(s) URL, lower case, without userinfo or port ("[::1]" for IPv6);
// "" when `url` is not one.
std::string UrlHost(std::string_view url);
// "host:port" of an http(s) URL, the scheme's default port when it names none; "" when
// `url` is not one. The address per-upstream limits count by.
std::string UrlAddress(std::string_view url);

}  // namespace farm::upstream

#endif  // FARM_COMMON_UPSTREAM_FETCHER_H_
