#include "common/wheel/wheel_name.h"

#include <algorithm>
#include <cctype>

namespace farm::wheel {
namespace {

bool AllOf(std::string_view s, const char* extra) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [extra](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view(extra).find(c) != std::string_view::npos;
  });
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? s.npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

Status CheckTag(std::string_view what, std::string_view tag, std::vector<std::string>* parts) {
  *parts = Split(tag, '.');
  for (const std::string& p : *parts) {
    if (!AllOf(p, "_")) {
      return Status::InvalidArgument("wheel file name has an invalid " + std::string(what) +
                                     " tag '" + std::string(tag) + "'");
    }
  }
  return Status::Ok();
}

Status CheckNameAndVersion(const WheelFilename& w) {
  if (!AllOf(w.name, "_.")) {
    return Status::InvalidArgument("wheel file name has an invalid distribution name '" + w.name +
                                   "'");
  }
  if (!AllOf(w.version, ".+!_") || !std::isalnum(static_cast<unsigned char>(w.version[0])) ||
      std::count(w.version.begin(), w.version.end(), '+') > 1) {
    return Status::InvalidArgument("wheel file name has an invalid version '" + w.version + "'");
  }
  if (w.version.find('+') != std::string::npos && w.local_label.empty()) {
    return Status::InvalidArgument("wheel file name has an empty local version label");
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> WheelFilename::ExpandedTags() const {
  std::vector<std::string> out;
  for (const auto& py : python_tags) {
    for (const auto& abi : abi_tags) {
      for (const auto& plat : platform_tags) out.push_back(py + "-" + abi + "-" + plat);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool WheelFilename::IsPure() const {
  return !platform_tags.empty() && std::all_of(platform_tags.begin(), platform_tags.end(),
                                               [](const std::string& p) { return p == "any"; });
}

Result<WheelFilename> ParseWheelFilename(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  constexpr std::string_view kSuffix = ".whl";
  if (base.size() <= kSuffix.size() || base.substr(base.size() - kSuffix.size()) != kSuffix) {
    return Status::InvalidArgument("wheel file name '" + std::string(base) +
                                   "' does not end in .whl");
  }
  std::vector<std::string> parts = Split(base.substr(0, base.size() - kSuffix.size()), '-');
  if (parts.size() != 5 && parts.size() != 6) {
    return Status::InvalidArgument("wheel file name '" + std::string(base) + "' has " +
                                   std::to_string(parts.size()) +
                                   " '-'-separated parts; PEP 427 wants 5 or 6");
  }
  WheelFilename w;
  w.name = parts[0];
  w.version = parts[1];
  size_t plus = w.version.find('+');
  if (plus != std::string::npos) w.local_label = w.version.substr(plus + 1);
  FARM_RETURN_IF_ERROR(CheckNameAndVersion(w));
  if (parts.size() == 6) {
    w.build_tag = parts[2];
    if (!AllOf(w.build_tag, "_.") || !std::isdigit(static_cast<unsigned char>(w.build_tag[0]))) {
      return Status::InvalidArgument("wheel build tag '" + w.build_tag +
                                     "' must start with a digit");
    }
  }
  size_t t = parts.size() - 3;
  w.python_tag = parts[t];
  w.abi_tag = parts[t + 1];
  w.platform_tag = parts[t + 2];
  FARM_RETURN_IF_ERROR(CheckTag("python", w.python_tag, &w.python_tags));
  FARM_RETURN_IF_ERROR(CheckTag("abi", w.abi_tag, &w.abi_tags));
  FARM_RETURN_IF_ERROR(CheckTag("platform", w.platform_tag, &w.platform_tags));
  return w;
}

std::string NormalizeProjectName(std::string_view name) {
  std::string out;
  bool in_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) out.push_back('-');
      in_run = true;
      continue;
    }
    in_run = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string NormalizeVersion(std::string_view version) {
  std::string out;
  for (char c : version)
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  // PEP 440's optional 'v' precedes the release number; only that one is dropped, so
  // normalising twice changes nothing ("vv1" stays, "v1" becomes "1").
  if (out.size() > 1 && out[0] == 'v' && std::isdigit(static_cast<unsigned char>(out[1]))) {
    out.erase(0, 1);
  }
  size_t plus = out.find('+');
  if (plus != std::string::npos) {
    std::replace(out.begin() + plus, out.end(), '-', '.');
    std::replace(out.begin() + plus, out.end(), '_', '.');
  }
  return out;
}

std::string PlatformArch(std::string_view tag) {
  if (tag == "any") return "any";
  for (std::string_view prefix : {"linux_", "manylinux2014_", "manylinux2010_", "manylinux1_"}) {
    if (tag.substr(0, prefix.size()) == prefix) return std::string(tag.substr(prefix.size()));
  }
  for (std::string_view prefix : {"manylinux_", "musllinux_"}) {
    if (tag.substr(0, prefix.size()) != prefix) continue;
    // manylinux_{glibc major}_{glibc minor}_{arch}: the arch follows the second '_'.
    std::string_view rest = tag.substr(prefix.size());
    size_t first = rest.find('_');
    size_t second = first == rest.npos ? rest.npos : rest.find('_', first + 1);
    if (second != rest.npos) return std::string(rest.substr(second + 1));
  }
  return std::string(tag);
}

}  // namespace farm::wheel
