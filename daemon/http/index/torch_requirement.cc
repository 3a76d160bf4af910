#include "daemon/http/index/torch_requirement.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"
#include "common/wheel/wheel_name.h"

namespace farm::http {
namespace {

constexpr int kMaxRows = 32;

bool NameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// Whether a marker names `extra` as a variable (not inside a quoted value).
bool MarkerNamesExtra(std::string_view marker) {
  char quote = 0;
  for (size_t i = 0; i < marker.size(); ++i) {
    char c = marker[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      continue;
    }
    if (marker.substr(i, 5) == "extra" && (i == 0 || !NameChar(marker[i - 1])) &&
        (i + 5 == marker.size() || !NameChar(marker[i + 5]))) {
      return true;
    }
  }
  return false;
}

// The specifier part of a torch row after its name: extras dropped, "(...)" unwrapped.
// Returns false for a URL requirement, unbalanced brackets or extras that are not names
// (pip refuses such a requirement, so it admits no torch).
bool SpecifierText(std::string_view rest, std::string* out) {
  std::string s = TrimSpace(rest);
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos) return false;
    std::string_view list = std::string_view(s).substr(1, close - 1);
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string extra = TrimSpace(list.substr(0, comma));
      if (extra.empty() || !std::all_of(extra.begin(), extra.end(), NameChar)) return false;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    s = TrimSpace(std::string_view(s).substr(close + 1));
  }
  if (!s.empty() && s.front() == '(') {
    if (s.back() != ')') return false;
    s = TrimSpace(std::string_view(s).substr(1, s.size() - 2));
  }
  if (s.find('@') != std::string::npos || s.find("===") != std::string::npos) return false;
  *out = s;
  return true;
}

// The versions the clauses of `spec` name, for the directory's list of torch releases.
void NamedVersions(std::string_view spec, std::vector<upstream::ReleaseVersion>* out) {
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string clause = TrimSpace(spec.substr(pos, comma == spec.npos ? spec.npos : comma - pos));
    if (!clause.starts_with("!=") && !clause.starts_with("<")) {
      size_t start = clause.find_first_of("0123456789");
      std::string version = start == std::string::npos ? "" : clause.substr(start);
      if (version.ends_with(".*")) version.resize(version.size() - 2);
      if (auto v = upstream::ParseReleaseVersion(version)) out->push_back(*v);
    }
    if (comma == spec.npos) break;
    pos = comma + 1;
  }
}

// Reads one Requires-Dist value into `req`; false when it is not a row for torch.
bool AddRow(std::string_view value, TorchRequirement* req) {
  size_t semi = value.find(';');
  std::string_view requirement = value.substr(0, semi);
  if (semi != value.npos && MarkerNamesExtra(value.substr(semi + 1))) return false;
  std::string trimmed = TrimSpace(requirement);
  size_t end = 0;
  while (end < trimmed.size() && NameChar(trimmed[end])) ++end;
  if (end == 0 || wheel::NormalizeProjectName(std::string_view(trimmed).substr(0, end)) != "torch")
    return false;
  req->present = true;
  std::string spec;
  if (!SpecifierText(std::string_view(trimmed).substr(end), &spec)) {
    req->valid = false;
    req->text += (req->text.empty() ? "" : ",") + trimmed;
    return true;
  }
  auto parsed = upstream::VersionSpec::Parse(spec);
  if (!parsed.ok()) {
    req->valid = false;
  } else {
    req->specs.push_back(std::move(*parsed));
    NamedVersions(spec, &req->named);
  }
  if (req->text.empty()) {
    req->text = "torch" + spec;
  } else if (!spec.empty()) {
    req->text += "," + spec;
  }
  return true;
}

}  // namespace

TorchRequirement TorchRequirementOf(std::string_view metadata) {
  TorchRequirement req;
  int rows = 0;
  size_t pos = 0;
  while (pos < metadata.size()) {
    size_t eol = metadata.find('\n', pos);
    std::string_view line = metadata.substr(pos, eol == metadata.npos ? metadata.npos : eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the headers end; the description follows
    constexpr std::string_view kKey = "requires-dist:";
    if (line.size() > kKey.size()) {
      if (AsciiLower(line.substr(0, kKey.size())) == kKey &&
          AddRow(line.substr(kKey.size()), &req) && ++rows >= kMaxRows) {
        req.valid = false;  // more torch rows than any real wheel has
        break;
      }
    }
    if (eol == metadata.npos) break;
    pos = eol + 1;
  }
  if (req.present && !req.valid) req.specs.clear();
  return req;
}

bool AdmitsTorch(const TorchRequirement& requirement, const upstream::ReleaseVersion& torch) {
  if (!requirement.present) return true;
  if (!requirement.valid) return false;
  for (const auto& spec : requirement.specs) {
    if (!spec.Matches(torch)) return false;
  }
  return true;
}

}  // namespace farm::http
