// The HTTP seam of the provisioner: GETs of index pages and manifests (small, in memory)
// and downloads (streamed to a sink). CurlFetcher is the real implementation; unit tests
// use a scripted fake (tests/unit/worker/env/fake_fetcher.h).
//
// Errors follow failure.h: a transport failure, a timeout or a 5xx answer is Unavailable
// (or DeadlineExceeded), 404 and 410 are NotFound, any other non-2xx answer is
// Unavailable naming the status; an HTTP error names an excerpt of its body
// (HttpErrorStatus). Only http and https URLs are fetched, redirects
// included. Implementations allow concurrent calls from several threads.
#ifndef FARM_COMMON_UPSTREAM_FETCHER_H_
#define FARM_COMMON_UPSTREAM_FETCHER_H_

#include <cstdint>
#include <functional>
#include <memory>
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

struct CurlFetcherOptions {
  int64_t connect_timeout_ms = 15'000;
  // A transfer moving less than 1 KiB/s for this long is abandoned (Unavailable).
  int64_t stall_timeout_ms = 60'000;
  // Whole-request limit for pages; downloads rely on the stall limit.
  int64_t page_timeout_ms = 120'000;
  int max_redirects = 5;
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

}  // namespace farm::upstream

#endif  // FARM_COMMON_UPSTREAM_FETCHER_H_
