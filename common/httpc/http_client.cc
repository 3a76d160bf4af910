#include "common/httpc/http_client.h"

#include <strings.h>

namespace farm::httpc {

bool CaseInsensitiveLess::operator()(const std::string& a, const std::string& b) const {
  return strcasecmp(a.c_str(), b.c_str()) < 0;
}

void HttpHeaders::Append(const std::string& name, const std::string& value) {
  auto it = map_.find(name);
  if (it == map_.end()) {
    map_[name] = value;
  } else {
    it->second += ", " + value;
  }
}

std::optional<std::string> HttpHeaders::Get(const std::string& name) const {
  auto it = map_.find(name);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

std::string HttpHeaders::GetOr(const std::string& name, const std::string& fallback) const {
  auto value = Get(name);
  return value ? *value : fallback;
}

bool IsMutatingMethod(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

}  // namespace farm::httpc
