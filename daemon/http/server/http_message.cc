#include "daemon/http/server/http_message.h"

#include <boost/json.hpp>

#include "common/utf8.h"

namespace farm::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Bodies that declare UTF-8 (text, JSON, HTML) are made valid UTF-8 on the way out: they
// may quote request paths (%FF decodes to a raw byte), file names or build output, and one
// bad byte makes a whole JSON answer unparsable for strict clients.
std::string Utf8Body(std::string body) {
  return IsValidUtf8(body) ? std::move(body) : ToValidUtf8(body);
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos <= query.size() && out.size() < 64) {
    size_t amp = query.find('&', pos);
    std::string_view part =
        query.substr(pos, amp == std::string_view::npos ? query.npos : amp - pos);
    if (!part.empty()) {
      size_t eq = part.find('=');
      std::string key = PercentDecode(part.substr(0, eq), true);
      std::string value = eq == part.npos ? "" : PercentDecode(part.substr(eq + 1), true);
      out[std::move(key)] = std::move(value);
    }
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return out;
}

Request MakeRequest(std::string method, std::string_view target) {
  Request r;
  r.method = std::move(method);
  size_t q = target.find('?');
  r.path = PercentDecode(target.substr(0, q), false);
  if (q != std::string_view::npos) r.query = ParseQuery(target.substr(q + 1));
  return r;
}

Response TextResponse(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = Utf8Body(std::move(body));
  return r;
}

Response JsonResponse(int status, std::string json) {
  Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = Utf8Body(std::move(json));
  return r;
}

Response HtmlResponse(int status, std::string html) {
  Response r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.body = Utf8Body(std::move(html));
  return r;
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnimplemented:
      return 501;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

Response ErrorResponse(const Status& status) {
  boost::json::object err{{"code", StatusCodeName(status.code())}, {"message", status.message()}};
  Response r = JsonResponse(HttpStatusFor(status.code()),
                            boost::json::serialize(boost::json::object{{"error", err}}));
  if (status.code() == StatusCode::kUnauthenticated) {
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
  }
  return r;
}

std::string ReasonPhrase(std::string_view text) {
  constexpr size_t kMax = 512;
  std::string out;
  for (char c : text.substr(0, kMax)) out += c >= 0x20 && c < 0x7f ? c : '?';
  return out;
}

Response Redirect(int status, const std::string& location) {
  Response r = TextResponse(status, "see " + location + "\n");
  r.headers.emplace_back("Location", location);
  return r;
}

std::string HtmlEscape(std::string_view s) { return EscapeMarkup(s); }

Response JsonOk(const boost::json::value& v) {
  return JsonResponse(200, boost::json::serialize(v));
}

bool IsRead(const Request& req) { return req.method == "GET" || req.method == "HEAD"; }

Response MethodNotAllowed(const char* allow) {
  Response r = ErrorResponse(Status::Unimplemented("method not allowed"));
  r.status = 405;
  r.headers.emplace_back("Allow", allow);
  return r;
}

}  // namespace farm::http
