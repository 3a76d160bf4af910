#include "common/wheel/metadata/dependency.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"
#include "common/wheel/wheel_name.h"

namespace farm::wheel {
namespace {

bool IsDependencyNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

Status Bad(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("requirement \"" + std::string(text.substr(0, 120)) +
                                 "\": " + why);
}

// Reads "[a, b]" at the start of `rest` into `extras` (normalized, sorted) and returns what
// follows it, trimmed; `rest` itself when it holds no list.
Result<std::string> ReadExtras(std::string_view text, const std::string& rest,
                               std::vector<std::string>* extras) {
  if (!rest.starts_with('[')) return rest;
  size_t close = rest.find(']');
  if (close == std::string::npos) return Bad(text, "unclosed extras");
  std::string_view list = std::string_view(rest).substr(1, close - 1);
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string extra = TrimSpace(list.substr(0, comma));
    if (extra.empty() || !std::all_of(extra.begin(), extra.end(), IsDependencyNameChar)) {
      return Bad(text, "malformed extras");
    }
    extras->push_back(NormalizeProjectName(extra));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  std::sort(extras->begin(), extras->end());
  return TrimSpace(std::string_view(rest).substr(close + 1));
}

}  // namespace

std::string_view DependencyName(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size() && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  size_t end = begin;
  while (end < text.size() && IsDependencyNameChar(text[end])) ++end;
  return text.substr(begin, end - begin);
}

Result<DependencySpec> ParseDependencyHead(std::string_view text) {
  DependencySpec dep;
  size_t semi = text.find(';');
  if (semi != std::string_view::npos) dep.marker = TrimSpace(text.substr(semi + 1));
  std::string req = TrimSpace(text.substr(0, semi));
  dep.name = std::string(DependencyName(req));
  FARM_ASSIGN_OR_RETURN(dep.specifier,
                        ReadExtras(text, TrimSpace(req.substr(dep.name.size())), &dep.extras));
  return dep;
}

Result<DependencySpec> ParseDependency(std::string_view text) {
  if (text.size() > kMaxDependencyBytes) return Bad(text, "too long");
  FARM_ASSIGN_OR_RETURN(DependencySpec dep, ParseDependencyHead(text));
  if (dep.name.empty() || !IsAlnum(dep.name.front()) || !IsAlnum(dep.name.back())) {
    return Bad(text, "no project name");
  }
  std::string& rest = dep.specifier;
  if (rest.starts_with('@')) return Bad(text, "a URL requirement");
  if (rest.starts_with('(')) {
    if (!rest.ends_with(')')) return Bad(text, "unclosed '('");
    rest = TrimSpace(std::string_view(rest).substr(1, rest.size() - 2));
  }
  for (char c : rest) {
    if (!IsAlnum(c) && std::string_view("<>=!~.*+,_- ").find(c) == std::string_view::npos) {
      return Bad(text, "unexpected character in the version specifier");
    }
  }
  return dep;
}

bool MarkerNamesExtra(std::string_view marker) {
  char quote = 0;
  for (size_t i = 0; i < marker.size(); ++i) {
    char c = marker[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') continue;
    // A word as the marker grammar reads one (pep508.h): letters, digits, '_' and '.'.
    size_t j = i;
    while (j < marker.size() && (IsAlnum(marker[j]) || marker[j] == '_' || marker[j] == '.')) ++j;
    if (marker.substr(i, j - i) == "extra") return true;
    i = j - 1;
  }
  return false;
}

}  // namespace farm::wheel
