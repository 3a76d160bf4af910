#include "common/httpc/http_util.h"

#include <algorithm>
#include <cctype>

#include "common/log.h"
#include "common/strings.h"

namespace farm::httpc {
namespace {

constexpr size_t kMaxErrorDetail = 300;

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// The most useful human-readable part of an error body.
std::string ErrorDetail(const std::string& body) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  std::string detail;
  if (!ec && v.is_object()) {
    const auto& o = v.as_object();
    detail = JsonString(o, "message");
    if (detail.empty()) detail = JsonString(o, "error");
    if (auto it = o.find("errors"); it != o.end()) {
      detail += " " + boost::json::serialize(it->value());
    }
  } else {
    detail = body;
  }
  if (detail.size() > kMaxErrorDetail) detail = detail.substr(0, kMaxErrorDetail) + "...";
  return detail;
}

}  // namespace

bool IsRateLimited(const HttpResponse& response) {
  if (response.status == 429) return true;
  if (response.status != 403) return false;
  if (response.headers.GetOr("x-ratelimit-remaining", "") == "0") return true;
  if (response.headers.Has("retry-after")) return true;
  return AsciiLower(response.body).find("rate limit") != std::string::npos;
}

std::string PercentEncode(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (IsUnreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string EncodePath(std::string_view path) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    out += PercentEncode(path.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    out += '/';
    start = slash + 1;
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(n >> shift) & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = uint8_t(bytes[i]) << 16;
    if (rest == 2) n |= uint8_t(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string UrlForLog(std::string_view url) { return std::string(url.substr(0, url.find('?'))); }

StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
    case 422:
      return StatusCode::kAlreadyExists;
    case 412:
      return StatusCode::kFailedPrecondition;
    case 408:
    case 429:
      return StatusCode::kResourceExhausted;
    default:
      break;
  }
  if (status >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInvalidArgument;
}

Status HttpError(std::string_view what, const HttpResponse& response) {
  std::string message = std::string(what) + ": HTTP " + std::to_string(response.status);
  std::string detail = ErrorDetail(response.body);
  if (!detail.empty()) message += ": " + detail;
  StatusCode code =
      IsRateLimited(response) ? StatusCode::kResourceExhausted : CodeForHttpStatus(response.status);
  return Status(code, log::Redact(message));
}

Result<boost::json::value> ParseJson(std::string_view text, std::string_view what) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) return Status::InvalidArgument("malformed JSON in " + std::string(what));
  return v;
}

Result<boost::json::object> ParseObject(const HttpResponse& response, std::string_view what) {
  FARM_ASSIGN_OR_RETURN(boost::json::value v, ParseJson(response.body, what));
  if (!v.is_object()) {
    return Status::InvalidArgument("expected a JSON object in " + std::string(what));
  }
  return v.as_object();
}

std::string JsonString(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return "";
  return std::string(it->value().as_string());
}

int64_t JsonInt(const boost::json::object& o, std::string_view key, int64_t fallback) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (it->value().is_int64()) return it->value().as_int64();
  if (it->value().is_uint64()) return static_cast<int64_t>(it->value().as_uint64());
  return fallback;
}

bool JsonBool(const boost::json::object& o, std::string_view key, bool fallback) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_bool()) return fallback;
  return it->value().as_bool();
}

std::string NextLink(const HttpHeaders& headers) {
  std::string link = headers.GetOr("link", "");
  size_t pos = 0;
  while (pos < link.size()) {
    size_t open = link.find('<', pos);
    size_t close = link.find('>', open);
    if (open == std::string::npos || close == std::string::npos) break;
    size_t next = link.find(',', close);
    std::string params =
        link.substr(close + 1, next == std::string::npos ? std::string::npos : next - close - 1);
    if (params.find("rel=\"next\"") != std::string::npos) {
      return link.substr(open + 1, close - open - 1);
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return "";
}

}  // namespace farm::httpc
