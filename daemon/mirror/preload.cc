#include "daemon/mirror/preload.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstdlib>

#include "common/archive/entry_rules.h"
#include "common/upstream/simple_index.h"
#include "common/wheel/wheel_name.h"

namespace farm::mirror {
namespace {

namespace json = boost::json;

constexpr std::string_view kSdistSuffixes[] = {".tar.gz", ".zip"};

void Visit(const json::value& v,
           const std::function<void(const std::string&, const std::string&, int64_t)>& visit) {
  if (!v.is_object()) return;
  const json::object& o = v.as_object();
  const json::value* rel = o.if_contains("relative_path");
  const json::value* sha = o.if_contains("sha256");
  if (rel && rel->is_string() && sha && sha->is_string()) {
    int64_t size = -1;
    if (const json::value* s = o.if_contains("size")) {
      if (s->is_int64()) size = s->as_int64();
      if (s->is_string()) size = std::strtoll(std::string(s->as_string()).c_str(), nullptr, 10);
    }
    visit(std::string(rel->as_string()), std::string(sha->as_string()), size);
    return;
  }
  for (const auto& [key, child] : o) Visit(child, visit);
}

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == path.npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string_view PreloadKindName(PreloadKind kind) {
  switch (kind) {
    case PreloadKind::kIndexFile:
      return "index-file";
    case PreloadKind::kManifest:
      return "manifest";
    case PreloadKind::kArchive:
      return "archive";
  }
  return "index-file";
}

Result<PreloadKind> ParsePreloadKind(std::string_view name) {
  for (PreloadKind kind :
       {PreloadKind::kIndexFile, PreloadKind::kManifest, PreloadKind::kArchive}) {
    if (PreloadKindName(kind) == name) return kind;
  }
  return Status::InvalidArgument("no preload kind " + std::string(name.substr(0, 80)));
}

Status CheckPlainFileName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("an empty file name");
  if (name.size() > 255) {
    return Status::InvalidArgument("a file name of " + std::to_string(name.size()) +
                                   " bytes (at most 255)");
  }
  std::string shown(name.substr(0, 80));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  for (char c : name) {
    if (c == '/' || c == '\\') {
      return Status::InvalidArgument("the file name \"" + shown + "\" holds a path separator");
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("the file name \"" + shown + "\" holds a control byte");
    }
  }
  if (name[0] == '.') {
    return Status::InvalidArgument("the file name \"" + shown + "\" starts with '.'");
  }
  return Status::Ok();
}

Result<std::string> ProjectOfDistribution(std::string_view filename) {
  FARM_RETURN_IF_ERROR(CheckPlainFileName(filename));
  if (filename.ends_with(".whl")) {
    auto wheel = wheel::ParseWheelFilename(filename);
    if (!wheel.ok()) {
      return Status::InvalidArgument(std::string(filename.substr(0, 200)) +
                                     " is not a wheel file name: " + wheel.status().message());
    }
    return wheel::NormalizeProjectName(wheel->name);
  }
  for (std::string_view suffix : kSdistSuffixes) {
    if (!filename.ends_with(suffix)) continue;
    std::string_view stem = filename.substr(0, filename.size() - suffix.size());
    size_t dash = stem.rfind('-');
    if (dash != stem.npos && dash > 0 && dash + 1 < stem.size() &&
        std::isdigit(static_cast<unsigned char>(stem[dash + 1]))) {
      std::string_view name = stem.substr(0, dash);
      bool plain = std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
      if (plain) return wheel::NormalizeProjectName(name);
    }
  }
  return Status::InvalidArgument(std::string(filename.substr(0, 200)) +
                                 " is neither a wheel (.whl) nor an sdist "
                                 "(<name>-<version>.tar.gz or .zip)");
}

Status CheckDistributionMagic(std::string_view filename, std::string_view head) {
  bool zip = filename.ends_with(".whl") || filename.ends_with(".zip");
  std::string_view magic =
      zip ? std::string_view("PK\x03\x04", 4) : std::string_view("\x1f\x8b", 2);
  if (head.substr(0, magic.size()) == magic) return Status::Ok();
  return Status::InvalidArgument(std::string(filename.substr(0, 200)) + " is not " +
                                 (zip ? "a zip archive" : "gzip-compressed"));
}

Status VisitManifestArchives(
    std::string_view text,
    const std::function<void(const std::string&, const std::string&, int64_t)>& visit) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) return Status::InvalidArgument("not a JSON manifest: " + ec.message());
  Visit(doc, visit);
  return Status::Ok();
}

Status CheckManifest(std::string_view text) {
  int archives = 0;
  Status bad;
  FARM_RETURN_IF_ERROR(
      VisitManifestArchives(text, [&](const std::string& rel, const std::string& sha, int64_t) {
        ++archives;
        std::string rule;
        std::string why = archives::CheckEntryName(rel, &rule);
        if (bad.ok() && !why.empty()) {
          bad = Status::InvalidArgument("the manifest lists the path \"" + rel.substr(0, 200) +
                                        "\": " + why);
        }
        if (bad.ok() && !upstream::IsSha256Hex(sha)) {
          bad = Status::InvalidArgument("the manifest lists " + rel.substr(0, 200) +
                                        " with no valid sha256");
        }
      }));
  FARM_RETURN_IF_ERROR(bad);
  if (archives == 0) {
    return Status::InvalidArgument("the manifest lists no archive (relative_path and sha256)");
  }
  return Status::Ok();
}

Result<ManifestArchive> FindManifestArchive(std::string_view manifest_json,
                                            std::string_view filename) {
  ManifestArchive found;
  int matches = 0;
  FARM_RETURN_IF_ERROR(VisitManifestArchives(
      manifest_json, [&](const std::string& rel, const std::string& sha, int64_t size) {
        if (BaseName(rel) != filename) return;
        if (++matches == 1) found = {rel, sha, size};
      }));
  if (matches == 0) {
    return Status::NotFound("the manifest lists no archive named " +
                            std::string(filename.substr(0, 200)));
  }
  if (matches > 1) {
    return Status::InvalidArgument("the manifest lists " + std::string(filename.substr(0, 200)) +
                                   " more than once");
  }
  return found;
}

}  // namespace farm::mirror
