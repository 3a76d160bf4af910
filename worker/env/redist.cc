#include "worker/env/redist.h"

#include <algorithm>
#include <boost/json.hpp>
#include <regex>

#include "common/archive/entry_rules.h"
#include "common/upstream/simple_index.h"
#include "worker/env/downloads.h"

namespace farm::env {
namespace {

namespace json = boost::json;

bool ValidVersion(const std::string& v) {
  static const std::regex re(R"(\d+(\.\d+){0,4})");
  return v.size() <= 40 && std::regex_match(v, re);
}

// Numeric, part by part ("13.0.10" > "13.0.9").
bool VersionLess(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) {
    std::vector<long> out;
    for (size_t i = 0; i < v.size();) {
      size_t dot = v.find('.', i);
      out.push_back(std::strtol(v.substr(i, dot - i).c_str(), nullptr, 10));
      i = dot == std::string::npos ? v.size() : dot + 1;
    }
    return out;
  };
  return parts(a) < parts(b);
}

Result<RedistArchive> ArchiveFrom(const std::string& component, const std::string& version,
                                  const json::object& entry) {
  RedistArchive a;
  a.component = component;
  a.version = version;
  const json::value* rel = entry.if_contains("relative_path");
  const json::value* sha = entry.if_contains("sha256");
  if (rel == nullptr || !rel->is_string() || sha == nullptr || !sha->is_string()) {
    return Status::InvalidArgument(component + ": archive entry without relative_path or sha256");
  }
  a.relative_path = std::string(rel->as_string());
  a.sha256 = std::string(sha->as_string());
  std::string rule;
  std::string why = archives::CheckEntryName(a.relative_path, &rule);
  if (!why.empty()) return Status::InvalidArgument(component + ": relative_path " + why);
  if (!upstream::IsSha256Hex(a.sha256)) return Status::InvalidArgument(component + ": bad sha256");
  if (const json::value* size = entry.if_contains("size")) {
    if (size->is_int64()) a.size = size->as_int64();
    if (size->is_string()) {
      std::string s(size->as_string());
      if (s.empty() || s.size() > 15 || !std::all_of(s.begin(), s.end(), ::isdigit)) {
        return Status::InvalidArgument(component + ": bad size '" + s + "'");
      }
      a.size = std::stoll(s);
    }
  }
  return a;
}

}  // namespace

Result<RedistManifest> ParseRedistManifest(const std::string& text) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec || !doc.is_object()) return Status::InvalidArgument("redist manifest is not JSON");
  RedistManifest m;
  const json::object& root = doc.as_object();
  const json::value* label = root.if_contains("release_label");
  if (label == nullptr || !label->is_string() || !ValidVersion(std::string(label->as_string()))) {
    return Status::InvalidArgument("redist manifest without a release_label");
  }
  m.release_label = std::string(label->as_string());
  for (const auto& [key, value] : root) {
    if (!value.is_object()) continue;  // release_date, release_product, ...
    const json::object& comp = value.as_object();
    std::string version;
    if (const json::value* v = comp.if_contains("version"); v && v->is_string()) {
      version = std::string(v->as_string());
    }
    for (const auto& [platform, entry] : comp) {
      if (!entry.is_object() || !entry.as_object().contains("relative_path")) continue;
      FARM_ASSIGN_OR_RETURN(RedistArchive a,
                            ArchiveFrom(std::string(key), version, entry.as_object()));
      m.components[std::string(key)][std::string(platform)] = std::move(a);
    }
  }
  return m;
}

std::vector<std::string> ManifestVersionsInListing(const std::string& html) {
  static const std::regex re(R"(href=["']?(?:\./)?redistrib_(\d+(?:\.\d+){0,4})\.json["'\s>])");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    std::string v = (*it)[1];
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

Result<std::string> PickManifestVersion(const std::vector<std::string>& versions,
                                        const std::string& wanted) {
  std::string best;
  for (const std::string& v : versions) {
    bool match = v == wanted ||
                 (v.size() > wanted.size() && v.rfind(wanted, 0) == 0 && v[wanted.size()] == '.');
    if (match && (best.empty() || VersionLess(best, v))) best = v;
  }
  if (best.empty()) {
    std::string have;
    for (const std::string& v : versions) have += (have.empty() ? "" : ", ") + v;
    return Status::NotFound("no redist manifest for CUDA " + wanted +
                            " (the folder has: " + (have.empty() ? "none" : have) + ")");
  }
  return best;
}

Result<std::vector<RedistArchive>> SelectArchives(const RedistManifest& manifest,
                                                  const std::vector<std::string>& components,
                                                  const std::string& platform) {
  std::vector<RedistArchive> out;
  for (const std::string& c : components) {
    auto comp = manifest.components.find(c);
    if (comp == manifest.components.end() || !comp->second.count(platform)) {
      return Status::NotFound("redist " + manifest.release_label + " has no " + c + " for " +
                              platform);
    }
    out.push_back(comp->second.at(platform));
  }
  return out;
}

const std::vector<std::string>& DefaultRedistComponents() {
  static const std::vector<std::string> kComponents = {"cuda_nvcc", "cuda_crt", "libnvvm",
                                                       "cuda_cudart", "cuda_cccl"};
  return kComponents;
}

}  // namespace farm::env
