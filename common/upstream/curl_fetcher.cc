// CurlFetcher: the real Fetcher (fetcher.h) over libcurl's easy interface.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "common/upstream/fetcher.h"

namespace farm::upstream {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The most of an error answer's body kept for its excerpt.
constexpr size_t kErrorBodyBytes = 4096;

struct Transfer {
  const DownloadSink* sink = nullptr;
  std::string* body = nullptr;  // page mode
  int64_t max_bytes = 0;
  std::string if_none_match;  // page mode: a conditional GET
  Status failure;             // why a write callback stopped the transfer
  CURL* curl = nullptr;
  std::string error_body;  // the start of an error answer's body (HTTP 4xx/5xx)
};

size_t OnData(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  size_t n = size * nmemb;
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 400) {
    // An error answer never reaches the page or the sink: its start says why (farmd's 502
    // names the upstream's failure), the rest is not read.
    size_t keep = std::min(n, kErrorBodyBytes - t->error_body.size());
    t->error_body.append(data, keep);
    return t->error_body.size() < kErrorBodyBytes ? n : 0;
  }
  if (t->body != nullptr) {
    if (static_cast<int64_t>(t->body->size() + n) > t->max_bytes) {
      t->failure =
          Status::ResourceExhausted("page larger than " + std::to_string(t->max_bytes) + " bytes");
      return 0;
    }
    t->body->append(data, n);
    return n;
  }
  Status s = (*t->sink)(std::string_view(data, n));
  if (!s.ok()) {
    t->failure = s;
    return 0;
  }
  return n;
}

class CurlFetcher final : public Fetcher {
 public:
  explicit CurlFetcher(const CurlFetcherOptions& options) : options_(options) { GlobalInit(); }

  Result<FetchedPage> GetPage(const std::string& url, const std::string& accept,
                              int64_t max_bytes) override {
    return GetPageIfChanged(url, accept, max_bytes, "");
  }

  Result<FetchedPage> GetPageIfChanged(const std::string& url, const std::string& accept,
                                       int64_t max_bytes, const std::string& etag) override {
    FetchedPage page;
    Transfer t;
    t.body = &page.body;
    t.max_bytes = max_bytes;
    t.if_none_match = etag;
    FARM_RETURN_IF_ERROR(Run(url, accept, options_.page_timeout_ms, &t, &page));
    return page;
  }

  Status Download(const std::string& url, const DownloadSink& sink) override {
    Transfer t;
    t.sink = &sink;
    return Run(url, "", 0, &t, nullptr);
  }

 private:
  Status Run(const std::string& url, const std::string& accept, int64_t timeout_ms, Transfer* t,
             FetchedPage* page) {
    if (!IsHttpUrl(url)) return Status::InvalidArgument("not an http(s) URL: " + url);
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return Status::Internal("curl_easy_init failed");
    curl_slist* headers = nullptr;
    if (!accept.empty()) headers = curl_slist_append(headers, ("Accept: " + accept).c_str());
    // An ETag is an opaque quoted string; one carrying a line break would inject a header.
    if (!t->if_none_match.empty() && t->if_none_match.find_first_of("\r\n") == std::string::npos) {
      headers = curl_slist_append(headers, ("If-None-Match: " + t->if_none_match).c_str());
    }
    // Pages are asked for fresh, as pip asks index pages: a caching proxy between (farmd's
    // pull-through cache included) revalidates its copy rather than answer a stale list.
    if (t->body != nullptr) headers = curl_slist_append(headers, "Cache-Control: max-age=0");
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, static_cast<long>(options_.max_redirects));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout_ms));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     static_cast<long>(std::max<int64_t>(1, options_.stall_timeout_ms / 1000)));
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // identity and what curl decodes
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnData);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
    t->curl = curl;
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (page != nullptr) {
      char* effective = nullptr;
      char* type = nullptr;
      curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective);
      curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
      page->url = effective != nullptr ? effective : url;
      page->content_type = type != nullptr ? type : "";
      page->content_type = page->content_type.substr(0, page->content_type.find(';'));
      while (!page->content_type.empty() && page->content_type.back() == ' ') {
        page->content_type.pop_back();
      }
      std::transform(page->content_type.begin(), page->content_type.end(),
                     page->content_type.begin(), [](unsigned char c) { return std::tolower(c); });
      curl_header* etag = nullptr;
      if (curl_easy_header(curl, "ETag", 0, CURLH_HEADER, -1, &etag) == CURLHE_OK &&
          std::string_view(etag->value).size() <= 256) {
        page->etag = etag->value;
      }
      page->not_modified = rc == CURLE_OK && code == 304;
    }
    std::string detail = curl_easy_strerror(rc);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (code >= 400 && (rc == CURLE_OK || rc == CURLE_WRITE_ERROR)) {
      return HttpErrorStatus(url, code, t->error_body);
    }
    if (rc == CURLE_OK) return Status::Ok();
    if (rc == CURLE_WRITE_ERROR && !t->failure.ok()) return t->failure;
    if (rc == CURLE_OPERATION_TIMEDOUT) return Status::DeadlineExceeded(url + ": " + detail);
    return Status::Unavailable(url + ": " + detail);
  }

  CurlFetcherOptions options_;
};

}  // namespace

std::unique_ptr<Fetcher> MakeCurlFetcher(const CurlFetcherOptions& options) {
  return std::make_unique<CurlFetcher>(options);
}

std::string ErrorExcerpt(std::string_view body, size_t max_chars) {
  std::string out;
  bool in_tag = false;
  for (char raw : body) {
    auto c = static_cast<unsigned char>(raw);
    if (c == '<') in_tag = true;
    if (in_tag) {
      in_tag = c != '>';
      c = ' ';
    }
    if (c < 0x20 || c == 0x7f) c = ' ';
    if (c >= 0x80) c = '?';  // the excerpt goes into logs and terminals: ASCII only
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    if (out.size() == max_chars) {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out + "...";
    }
    out += static_cast<char>(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

Status HttpErrorStatus(const std::string& url, int64_t code, std::string_view body) {
  std::string what = url + " answered HTTP " + std::to_string(code);
  std::string excerpt = ErrorExcerpt(body);
  if (!excerpt.empty()) what += ": " + excerpt;
  if (code == 404 || code == 410) return Status::NotFound(what);
  return Status::Unavailable(what);
}

bool IsHttpUrl(std::string_view url) {
  size_t host = 0;
  if (url.substr(0, 7) == "http://") {
    host = 7;
  } else if (url.substr(0, 8) == "https://") {
    host = 8;
  } else {
    return false;
  }
  if (url.size() <= host || url[host] == '/') return false;
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace farm::upstream
