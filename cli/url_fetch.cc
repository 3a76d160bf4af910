#include "cli/url_fetch.h"

#include <curl/curl.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace farm::cli {
namespace {

struct Sink {
  const std::function<void(std::string_view)>* write;
  int64_t max_bytes;
  int64_t seen = 0;
  bool overflow = false;
};

size_t Write(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* sink = static_cast<Sink*>(userdata);
  size_t n = size * nmemb;
  sink->seen += static_cast<int64_t>(n);
  if (sink->seen > sink->max_bytes) {
    sink->overflow = true;
    return 0;  // aborts the transfer
  }
  (*sink->write)(std::string_view(data, n));
  return n;
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

struct HeadersFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

Status TooLarge(const std::string& source, int64_t max_bytes) {
  return Status::InvalidArgument(source + " is larger than " + std::to_string(max_bytes) +
                                 " bytes");
}

Status FetchUrl(const std::string& url, const FetchOptions& options,
                const std::function<void(std::string_view)>& write) {
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return Status::Internal("libcurl failed to start");
  Sink sink{&write, options.max_bytes};
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 15000L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Write);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  if (!options.ca_file.empty())
    curl_easy_setopt(curl.get(), CURLOPT_CAINFO, options.ca_file.c_str());
  std::unique_ptr<curl_slist, HeadersFree> headers;
  if (!options.accept.empty()) {
    headers.reset(curl_slist_append(nullptr, ("Accept: " + options.accept).c_str()));
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  }
  CURLcode rc = curl_easy_perform(curl.get());
  if (sink.overflow) return TooLarge(url, options.max_bytes);
  if (rc != CURLE_OK) {
    return Status::Unavailable("cannot fetch " + url + ": " +
                               (error[0] ? error : curl_easy_strerror(rc)));
  }
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status == 404) return Status::NotFound(url + ": HTTP 404 (not found)");
  if (status >= 400) return Status::Unavailable(url + ": HTTP " + std::to_string(status));
  return Status::Ok();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool IsUrl(std::string_view source) {
  return source.starts_with("http://") || source.starts_with("https://");
}

Status Fetch(const std::string& source, const FetchOptions& options,
             const std::function<void(std::string_view)>& sink) {
  if (IsUrl(source)) return FetchUrl(source, options, sink);
  std::ifstream in(source, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + source);
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    total += n;
    if (total > options.max_bytes) return TooLarge(source, options.max_bytes);
    sink(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  if (in.bad()) return Status::Internal("cannot read " + source);
  return Status::Ok();
}

Result<std::string> FetchAll(const std::string& source, const FetchOptions& options) {
  std::string out;
  FARM_RETURN_IF_ERROR(Fetch(source, options, [&out](std::string_view b) { out += b; }));
  return out;
}

std::string SourceFileName(const std::string& source) {
  if (!IsUrl(source)) return std::filesystem::path(source).filename().string();
  std::string path = source.substr(0, source.find_first_of("?#"));
  std::string last = path.substr(path.rfind('/') + 1);
  std::string out;
  for (size_t i = 0; i < last.size(); ++i) {
    if (last[i] == '%' && i + 2 < last.size() && HexValue(last[i + 1]) >= 0 &&
        HexValue(last[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(last[i + 1]) * 16 + HexValue(last[i + 2]));
      i += 2;
    } else {
      out += last[i];
    }
  }
  return out;
}

}  // namespace farm::cli
