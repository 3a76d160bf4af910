#include "common/httpc/curl_http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>

#include "common/httpc/http_util.h"
#include "common/log.h"

namespace farm::httpc {
namespace {

// Responses larger than this are API misuse (downloads are not done through this path).
constexpr size_t kMaxResponseBytes = 64u << 20;

// Where the request body comes from; the read callback consumes it, the seek callback
// rewinds it when libcurl must resend (redirects, connection reuse failures).
struct BodySource {
  const std::string* text = nullptr;
  FILE* file = nullptr;
  int64_t start = 0;   // first byte in `file`
  int64_t length = 0;  // bytes to send
  int64_t sent = 0;
};

struct ResponseSink {
  HttpResponse* response;
  bool overflow = false;
};

size_t ReadBody(char* buffer, size_t size, size_t nitems, void* userdata) {
  auto* src = static_cast<BodySource*>(userdata);
  int64_t want = std::min<int64_t>(static_cast<int64_t>(size * nitems), src->length - src->sent);
  if (want <= 0) return 0;
  size_t got = 0;
  if (src->text != nullptr) {
    src->text->copy(buffer, static_cast<size_t>(want), static_cast<size_t>(src->sent));
    got = static_cast<size_t>(want);
  } else {
    got = fread(buffer, 1, static_cast<size_t>(want), src->file);
    if (got == 0) return CURL_READFUNC_ABORT;  // the file shrank under us
  }
  src->sent += static_cast<int64_t>(got);
  return got;
}

int SeekBody(void* userdata, curl_off_t offset, int origin) {
  auto* src = static_cast<BodySource*>(userdata);
  if (origin != SEEK_SET || offset < 0 || offset > src->length) return CURL_SEEKFUNC_FAIL;
  if (src->file != nullptr && fseeko(src->file, src->start + offset, SEEK_SET) != 0) {
    return CURL_SEEKFUNC_FAIL;
  }
  src->sent = offset;
  return CURL_SEEKFUNC_OK;
}

size_t WriteBody(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* sink = static_cast<ResponseSink*>(userdata);
  size_t n = size * nmemb;
  if (sink->response->body.size() + n > kMaxResponseBytes) {
    sink->overflow = true;
    return 0;
  }
  sink->response->body.append(data, n);
  return n;
}

size_t WriteHeader(char* data, size_t size, size_t nitems, void* userdata) {
  auto* sink = static_cast<ResponseSink*>(userdata);
  std::string line(data, size * nitems);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    sink->response->headers = HttpHeaders();  // a new response (redirect or 100) begins
    return size * nitems;
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return size * nitems;
  std::string value = line.substr(colon + 1);
  size_t first = value.find_first_not_of(" \t");
  value = first == std::string::npos ? "" : value.substr(first);
  sink->response->headers.Append(line.substr(0, colon), value);
  return size * nitems;
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) fclose(f);
  }
};
struct EasyCleanup {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// Opens the body file (if any) and fills `src`; fails when the range is past the end.
Status PrepareBody(const HttpRequest& request, BodySource* src,
                   std::unique_ptr<FILE, FileCloser>* file) {
  if (request.body_file.empty()) {
    src->text = &request.body;
    src->length = static_cast<int64_t>(request.body.size());
    return Status::Ok();
  }
  file->reset(fopen(request.body_file.c_str(), "rb"));
  if (*file == nullptr) return Status::Unavailable("cannot open body file " + request.body_file);
  if (fseeko(file->get(), 0, SEEK_END) != 0) return Status::Unavailable("cannot seek body file");
  int64_t file_size = ftello(file->get());
  int64_t length = request.body_length < 0 ? file_size - request.body_offset : request.body_length;
  if (request.body_offset < 0 || request.body_offset + length > file_size) {
    return Status::InvalidArgument("body range past the end of " + request.body_file);
  }
  if (fseeko(file->get(), request.body_offset, SEEK_SET) != 0) {
    return Status::Unavailable("cannot seek body file");
  }
  src->file = file->get();
  src->start = request.body_offset;
  src->length = length;
  return Status::Ok();
}

bool HasBody(const HttpRequest& request) {
  return request.method != "GET" && request.method != "HEAD" &&
         (request.method != "DELETE" || !request.body.empty() || !request.body_file.empty());
}

void SetMethodAndBody(CURL* curl, const HttpRequest& request, BodySource* src) {
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!HasBody(request)) return;
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadBody);
  curl_easy_setopt(curl, CURLOPT_READDATA, src);
  curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, SeekBody);
  curl_easy_setopt(curl, CURLOPT_SEEKDATA, src);
  curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(src->length));
}

curl_slist* BuildHeaderList(const HttpRequest& request) {
  curl_slist* list = nullptr;
  for (const auto& [name, value] : request.headers.all()) {
    std::string line = value.empty() ? name + ";" : name + ": " + value;
    list = curl_slist_append(list, line.c_str());
  }
  // No "Expect: 100-continue" round trip: the servers answer after reading the body.
  return curl_slist_append(list, "Expect:");
}

void SetTransferOptions(CURL* curl, const HttpRequest& request) {
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
  if (request.stall_timeout_ms > 0) {
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(request.stall_timeout_ms / 1000)));
  }
}

}  // namespace

CurlHttpClient::CurlHttpClient() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<HttpResponse> CurlHttpClient::Send(const HttpRequest& request) {
  BodySource src;
  std::unique_ptr<FILE, FileCloser> file;
  if (HasBody(request)) FARM_RETURN_IF_ERROR(PrepareBody(request, &src, &file));
  std::unique_ptr<CURL, EasyCleanup> curl(curl_easy_init());
  if (!curl) return Status::Internal("curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistFree> headers(BuildHeaderList(request));
  HttpResponse response;
  ResponseSink sink{&response};
  char errbuf[CURL_ERROR_SIZE] = {0};
  SetTransferOptions(curl.get(), request);
  SetMethodAndBody(curl.get(), request, &src);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) {
    std::string what = request.method + " " + UrlForLog(request.url) + ": " +
                       (errbuf[0] != 0 ? errbuf : curl_easy_strerror(rc));
    if (sink.overflow) return Status::ResourceExhausted(log::Redact("response too large: " + what));
    if (rc == CURLE_OPERATION_TIMEDOUT) return Status::DeadlineExceeded(log::Redact(what));
    return Status::Unavailable(log::Redact(what));
  }
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  response.status = static_cast<int>(code);
  return response;
}

}  // namespace farm::httpc
