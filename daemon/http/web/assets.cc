#include "daemon/http/web/assets.h"

#include <algorithm>

#include "common/fs.h"

namespace farm::http {

std::string ContentTypeFor(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

Response ServeAsset(const std::string& web_root, std::string_view name) {
  bool plain =
      !name.empty() && name.front() != '.' && name.size() < 128 &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
      });
  if (!plain) return ErrorResponse(Status::NotFound("no asset"));
  Response r;
  r.content_type = ContentTypeFor(name);
  r.headers.emplace_back("Cache-Control", "no-cache");
  if (!web_root.empty()) {
    auto data = fs::ReadFile(web_root + "/" + std::string(name));
    if (!data.ok()) return ErrorResponse(data.status());
    r.body = std::move(data.value());
    return r;
  }
  for (const auto& a : EmbeddedAssets()) {
    if (a.name == name) {
      r.body = std::string(a.data);
      return r;
    }
  }
  return ErrorResponse(Status::NotFound("no asset " + std::string(name)));
}

}  // namespace farm::http
