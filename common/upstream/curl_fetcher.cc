// CurlFetcher: the real Fetcher (fetcher.h) over libcurl's easy interface. Redirects are
// followed here, one hop at a time, so that each is checked against the RedirectPolicy
// (libcurl's own following would only limit the schemes) and the bearer token and the
// userinfo reach only the hops they belong to.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "common/log.h"
#include "common/upstream/fetcher.h"

namespace farm::upstream {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string ToLowerAscii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The parts of an http(s) URL as libcurl's URL parser reads it (dot segments removed, as
// it sends the path). `ok` is false for anything else.
struct UrlParts {
  bool ok = false;
  std::string scheme, user, password, host, port, path;
  std::string Origin() const { return scheme + "://" + host + ":" + port; }
};

UrlParts ParseUrl(std::string_view url) {
  UrlParts p;
  if (!IsHttpUrl(url)) return p;
  CURLU* h = curl_url();
  if (h == nullptr) return p;
  if (curl_url_set(h, CURLUPART_URL, std::string(url).c_str(), 0) == CURLUE_OK) {
    auto get = [h](CURLUPart part, unsigned int flags, std::string* out) {
      char* v = nullptr;
      if (curl_url_get(h, part, &v, flags) == CURLUE_OK && v != nullptr) *out = v;
      curl_free(v);
    };
    get(CURLUPART_SCHEME, 0, &p.scheme);
    get(CURLUPART_USER, 0, &p.user);
    get(CURLUPART_PASSWORD, 0, &p.password);
    get(CURLUPART_HOST, 0, &p.host);
    get(CURLUPART_PORT, CURLU_DEFAULT_PORT, &p.port);
    get(CURLUPART_PATH, 0, &p.path);
    p.scheme = ToLowerAscii(p.scheme);
    p.host = ToLowerAscii(p.host);
    p.ok = !p.host.empty() && (p.scheme == "http" || p.scheme == "https");
  }
  curl_url_cleanup(h);
  return p;
}

// `url` with the userinfo of `from` (a hop back to the origin that was asked for).
std::string WithUserinfo(const std::string& url, const UrlParts& from) {
  CURLU* h = curl_url();
  if (h == nullptr) return url;
  std::string out = url;
  if (curl_url_set(h, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_set(h, CURLUPART_USER, from.user.c_str(), 0) == CURLUE_OK &&
      (from.password.empty() ||
       curl_url_set(h, CURLUPART_PASSWORD, from.password.c_str(), 0) == CURLUE_OK)) {
    char* v = nullptr;
    if (curl_url_get(h, CURLUPART_URL, &v, 0) == CURLUE_OK && v != nullptr) out = v;
    curl_free(v);
  }
  curl_url_cleanup(h);
  return out;
}

// The most of an error answer's body kept for its excerpt.
constexpr size_t kErrorBodyBytes = 4096;
struct Transfer {
  CURL* curl = nullptr;
  const DownloadSink* sink = nullptr;
  std::string* body = nullptr;  // page mode
  int64_t max_bytes = 0;
  std::string if_none_match;  // page mode: a conditional GET
  Status failure;             // why a write callback stopped the transfer
  const std::atomic<bool>* cancelled = nullptr;
  std::string error_body;  // the start of an error answer's body (HTTP 4xx/5xx)
};

bool IsRedirect(long code) {
  return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

size_t OnData(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  size_t n = size * nmemb;
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (IsRedirect(code)) return n;  // a redirect's own body is no part of the answer
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

int OnProgress(void* userdata, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(userdata);
  return t->cancelled != nullptr && t->cancelled->load() ? 1 : 0;
}

// One request's outcome, before it becomes a Status.
struct Hop {
  CURLcode rc = CURLE_OK;
  long code = 0;
  std::string redirect;  // where a 3xx answer points, "" for none
};

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
  // Follows `url`'s redirects one hop at a time, each checked against the policy.
  Status Run(const std::string& url, const std::string& accept, int64_t timeout_ms, Transfer* t,
             FetchedPage* page) {
    const std::string shown = log::RedactUrlCredentials(url);
    const UrlParts first = ParseUrl(url);
    if (!first.ok) return Status::InvalidArgument("not an http(s) URL: " + shown.substr(0, 300));
    t->cancelled = options_.cancelled.get();
    std::string current = url;
    for (int hops = 0;; ++hops) {
      if (t->cancelled != nullptr && t->cancelled->load()) {
        return Status::Cancelled("stopping: " + shown + " not fetched");
      }
      Hop hop = Perform(current, accept, timeout_ms, t, page);
      if (hop.rc != CURLE_OK || !IsRedirect(hop.code)) return Outcome(hop, current, *t);
      if (hop.redirect.empty()) return Outcome(hop, current, *t);
      if (hops >= options_.max_redirects) {
        return Status::Unavailable(shown + ": more than " + std::to_string(options_.max_redirects) +
                                   " redirects");
      }
      FARM_ASSIGN_OR_RETURN(current, NextHop(first, current, hop.redirect));
      if (page != nullptr) page->body.clear();
    }
  }

  // Where a redirect from `from` to `location` may go, or why not.
  Result<std::string> NextHop(const UrlParts& first, const std::string& from,
                              const std::string& location) const {
    const std::string shown_from = log::RedactUrlCredentials(from);
    UrlParts next = ParseUrl(location);
    if (!next.ok) {
      size_t colon = location.find(':');
      return Status::PermissionDenied(
          shown_from + " redirected to a URL that is not http(s) (" +
          (colon == std::string::npos ? std::string("?") : location.substr(0, colon)) +
          "): refused");
    }
    if (!options_.redirects.any_host && next.host != first.host &&
        options_.redirects.allowed_hosts.count(next.host) == 0) {
      return Status::PermissionDenied(shown_from + " redirected to another host (" + next.host +
                                      "): refused, only " + first.host +
                                      " and the allowed hosts are followed");
    }
    if (next.user.empty() && !first.user.empty() && next.Origin() == first.Origin()) {
      return WithUserinfo(location, first);
    }
    return location;
  }

  Hop Perform(const std::string& url, const std::string& accept, int64_t timeout_ms, Transfer* t,
              FetchedPage* page) {
    Hop hop;
    CURL* curl = curl_easy_init();
    if (curl == nullptr) {
      hop.rc = CURLE_FAILED_INIT;
      return hop;
    }
    t->curl = curl;
    curl_slist* headers = nullptr;
    if (!accept.empty()) headers = curl_slist_append(headers, ("Accept: " + accept).c_str());
    // An ETag is an opaque quoted string; one carrying a line break would inject a header.
    if (!t->if_none_match.empty() && t->if_none_match.find_first_of("\r\n") == std::string::npos) {
      headers = curl_slist_append(headers, ("If-None-Match: " + t->if_none_match).c_str());
    }
    // Pages are asked for fresh, as pip asks index pages: a caching proxy between (farmd's
    // pull-through cache included) revalidates its copy rather than answer a stale list.
    if (t->body != nullptr) headers = curl_slist_append(headers, "Cache-Control: max-age=0");
    if (options_.bearer != nullptr) {
      std::string auth = options_.bearer->HeaderFor(url);
      if (!auth.empty()) headers = curl_slist_append(headers, ("Authorization: " + auth).c_str());
    }
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
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
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, t);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    hop.rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &hop.code);
    char* location = nullptr;
    if (IsRedirect(hop.code) &&
        curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
        location != nullptr) {
      hop.redirect = location;
    }
    if (page != nullptr && !IsRedirect(hop.code)) ReadPageInfo(curl, url, hop, page);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    t->curl = nullptr;
    return hop;
  }

  static void ReadPageInfo(CURL* curl, const std::string& url, const Hop& hop, FetchedPage* page) {
    char* type = nullptr;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
    page->url = url;
    page->content_type = type != nullptr ? type : "";
    page->content_type = page->content_type.substr(0, page->content_type.find(';'));
    while (!page->content_type.empty() && page->content_type.back() == ' ') {
      page->content_type.pop_back();
    }
    page->content_type = ToLowerAscii(page->content_type);
    curl_header* etag = nullptr;
    if (curl_easy_header(curl, "ETag", 0, CURLH_HEADER, -1, &etag) == CURLHE_OK &&
        std::string_view(etag->value).size() <= 256) {
      page->etag = etag->value;
    }
    page->not_modified = hop.rc == CURLE_OK && hop.code == 304;
  }

  static Status Outcome(const Hop& hop, const std::string& url, const Transfer& t) {
    const std::string shown = log::RedactUrlCredentials(url);
    if (hop.rc == CURLE_OK && hop.code < 400) {
      if (IsRedirect(hop.code)) return Status::Unavailable(shown + ": a redirect without Location");
      return Status::Ok();
    }
    if (hop.code >= 400 && (hop.rc == CURLE_OK || hop.rc == CURLE_WRITE_ERROR)) {
      return HttpErrorStatus(url, hop.code, t.error_body);
    }
    if (hop.rc == CURLE_WRITE_ERROR && !t.failure.ok()) return t.failure;
    if (hop.rc == CURLE_ABORTED_BY_CALLBACK) return Status::Cancelled("stopping: " + shown);
    // curl's own texts may quote the URL.
    std::string detail = log::RedactUrlCredentials(curl_easy_strerror(hop.rc));
    if (hop.rc == CURLE_OPERATION_TIMEDOUT) return Status::DeadlineExceeded(shown + ": " + detail);
    return Status::Unavailable(shown + ": " + detail);
  }

  CurlFetcherOptions options_;
};

}  // namespace

std::unique_ptr<Fetcher> MakeCurlFetcher(const CurlFetcherOptions& options) {
  return std::make_unique<CurlFetcher>(options);
}

void ScopedBearer::Set(const std::string& url_prefix, const std::string& token) {
  std::lock_guard lock(mu_);
  prefix_ = url_prefix;
  token_ = token;
}

std::string ScopedBearer::HeaderFor(const std::string& url) const {
  std::string prefix, token;
  {
    std::lock_guard lock(mu_);
    prefix = prefix_;
    token = token_;
  }
  if (prefix.empty() || token.empty()) return "";
  UrlParts want = ParseUrl(prefix);
  UrlParts got = ParseUrl(url);
  if (!want.ok || !got.ok || !got.user.empty() || !got.password.empty()) return "";
  if (got.Origin() != want.Origin() || !got.path.starts_with(want.path)) return "";
  return "Bearer " + token;
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
  std::string what = log::RedactUrlCredentials(url) + " answered HTTP " + std::to_string(code);
  std::string excerpt = log::RedactUrlCredentials(ErrorExcerpt(body));
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

std::string UrlHost(std::string_view url) {
  UrlParts p = ParseUrl(url);
  return p.ok ? p.host : "";
}

std::string UrlAddress(std::string_view url) {
  UrlParts p = ParseUrl(url);
  return p.ok ? p.host + ":" + p.port : "";
}

}  // namespace farm::upstream
