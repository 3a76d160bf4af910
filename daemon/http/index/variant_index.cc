#include "daemon/http/index/variant_index.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <filesystem>
#include <set>
#include <tuple>
#include <vector>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/identity.h"
#include "common/wheel/relabel.h"
#include "common/wheel/wheel_name.h"
#include "daemon/http/index/simple_index.h"

namespace farm::http {

namespace json = boost::json;

namespace {

// The draft schema the farm's variant metadata follows (PEP 825; 0.x versions are drafts).
constexpr char kVariantSchema[] = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json";
constexpr std::string_view kPrefix = "/variants/";
constexpr size_t kMaxLabel = 16;

std::string PublicVersionOf(const std::string& version) {
  return version.substr(0, version.find('+'));
}

// PEP 427's escaping of a distribution name: runs of '-', '_' and '.' become '_', lower case.
std::string DistName(const std::string& project) {
  std::string out;
  for (char c : project) {
    bool sep = c == '-' || c == '_' || c == '.';
    if (sep && !out.empty() && out.back() == '_') continue;
    out += sep ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// "attn_example-0.1.0-variants.json" for project attn-example at public version 0.1.0.
std::string VariantsFileOf(const std::string& project, const std::string& version) {
  return DistName(project) + "-" + wheel::NormalizeVersion(version) + "-variants.json";
}

struct VariantEntry {
  IndexFile file;
  VariantOfFile variant;
};

// One entry per project, public version, tags and label: the newest file.
std::vector<VariantEntry> VariantEntries(const std::vector<IndexFile>& files) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, VariantEntry> best;
  for (const IndexFile& f : files) {
    VariantEntry e{f, VariantFor(f)};
    auto key = std::make_tuple(f.project, PublicVersionOf(f.version), f.tags, e.variant.label);
    auto [it, fresh] = best.emplace(key, e);
    if (!fresh && f.created_ms > it->second.file.created_ms) it->second = std::move(e);
  }
  std::vector<VariantEntry> out;
  for (auto& [key, e] : best) out.push_back(std::move(e));
  return out;
}

// The variants document of `entries` (all of one project and version, or one wheel's).
std::string VariantsDocument(const std::vector<const VariantEntry*>& entries) {
  json::object variants;
  for (const VariantEntry* e : entries)
    variants[e->variant.label] = json::parse(e->variant.properties_json);
  json::object doc{{"$schema", kVariantSchema},
                   {"default-priorities", json::object{{"namespace", json::array{"nvidia"}}}},
                   {"variants", std::move(variants)}};
  return json::serialize(doc);
}

struct VariantListing {
  std::string filename, url, sha256;
  int64_t size = 0;
};

// The project page: every variant wheel of the project (made now when new) and the
// variants file of each of its versions, as PEP 825 asks, on the page that links them.
Response VariantProjectPage(IndexCatalog& catalog, VariantWheels& wheels, const Negotiated& n,
                            const std::string& base, const std::string& project,
                            const std::vector<VariantEntry>& entries) {
  std::map<std::string, std::vector<const VariantEntry*>> versions;
  std::vector<VariantListing> listed;
  for (const VariantEntry& e : entries) {
    if (e.file.project != project) continue;
    versions[PublicVersionOf(e.file.version)].push_back(&e);
    auto made = wheels.Get(catalog, e.file, e.variant.label, VariantsDocument({&e}));
    if (!made.ok()) return ErrorResponse(made.status());
    listed.push_back({made->filename, base + "files/" + made->sha256 + "/" + made->filename,
                      made->sha256, made->size});
  }
  if (versions.empty()) return ErrorResponse(Status::NotFound("no project " + project));
  for (const auto& [version, list] : versions) {
    std::string doc = VariantsDocument(list);
    std::string name = VariantsFileOf(project, version);
    listed.push_back({name, base + "files/" + project + "/" + name, Sha256Hex(doc),
                      static_cast<int64_t>(doc.size())});
  }
  if (n.json) {
    json::array files, vs;
    for (const VariantListing& l : listed) {
      files.push_back(json::object{{"filename", l.filename},
                                   {"url", l.url},
                                   {"hashes", json::object{{"sha256", l.sha256}}},
                                   {"size", l.size}});
    }
    for (const auto& [version, list] : versions) vs.push_back(json::value(version));
    return IndexPage(n, json::serialize(json::object{{"meta", json::object{{"api-version", "1.1"}}},
                                                     {"name", project},
                                                     {"files", std::move(files)},
                                                     {"versions", std::move(vs)}}));
  }
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
      "content=\"1.1\"><title>Links for " +
      HtmlEscape(project) + "</title></head><body>\n<h1>Links for " + HtmlEscape(project) +
      "</h1>\n";
  for (const VariantListing& l : listed) {
    html += "<a href=\"" + HtmlEscape(l.url) + "#sha256=" + l.sha256 + "\">" +
            HtmlEscape(l.filename) + "</a><br>\n";
  }
  return IndexPage(n, html + "</body></html>\n");
}

Response VariantProjectList(const Negotiated& n, const std::vector<VariantEntry>& entries) {
  std::set<std::string> projects;
  for (const VariantEntry& e : entries) projects.insert(e.file.project);
  if (n.json) {
    json::array arr;
    for (const auto& p : projects) arr.push_back(json::object{{"name", p}});
    return IndexPage(n, json::serialize(json::object{{"meta", json::object{{"api-version", "1.1"}}},
                                                     {"projects", std::move(arr)}}));
  }
  std::string html =
      "<!DOCTYPE html>\n<html><head><title>PEP 825 variant wheels</title></head>"
      "<body>\n<h1>PEP 825 variant wheels</h1>\n";
  for (const auto& p : projects) {
    html += "<a href=\"" + HtmlEscape(p) + "/\">" + HtmlEscape(p) + "</a><br>\n";
  }
  return IndexPage(n, html + "</body></html>\n");
}

// /variants/<variant>/files/<sha256>/<wheel> or /variants/<variant>/files/<project>/<name>.
Response VariantFile(IndexCatalog& catalog, VariantWheels& wheels,
                     const std::vector<VariantEntry>& entries, std::string_view rest) {
  size_t slash = rest.find('/');
  if (slash == rest.npos) return ErrorResponse(Status::NotFound("no such file"));
  std::string first(rest.substr(0, slash)), name(rest.substr(slash + 1));
  if (name.ends_with("-variants.json")) {
    std::vector<const VariantEntry*> list;
    for (const VariantEntry& e : entries) {
      if (e.file.project == first &&
          VariantsFileOf(first, PublicVersionOf(e.file.version)) == name) {
        list.push_back(&e);
      }
    }
    if (list.empty()) return ErrorResponse(Status::NotFound("no variants file " + name));
    return JsonResponse(200, VariantsDocument(list));
  }
  for (const VariantEntry& e : entries) {
    auto made = wheels.Get(catalog, e.file, e.variant.label, VariantsDocument({&e}));
    if (!made.ok() || made->sha256 != first || made->filename != name) continue;
    Response r;
    r.kind = BodyKind::kFile;
    r.content_type = "application/octet-stream";
    r.file_path = made->path;
    return r;
  }
  return ErrorResponse(Status::NotFound("no variant wheel " + name));
}

}  // namespace

VariantOfFile VariantFor(const IndexFile& file) {
  std::set<std::pair<int, int>> real;
  std::set<int> virt;
  for (const arch::Image& i : file.images) {
    if (i.kind == arch::Image::Kind::kSass) {
      real.insert({i.major, i.minor});
    } else {
      virt.insert(i.major);
    }
  }
  json::array sm;
  std::string label;
  for (const auto& [major, minor] : real) {
    sm.push_back(json::value(std::to_string(major) + std::to_string(minor) + "_real"));
    label += (label.empty() ? "sm" : ".") + std::to_string(major) + std::to_string(minor);
  }
  std::string v;
  for (int major : virt) {
    sm.push_back(json::value(std::to_string(major) + "0_virtual"));
    v += (v.empty() ? "v" : ".") + std::to_string(major) + "0";
  }
  json::object nvidia;
  if (!file.cuda.empty()) nvidia["cuda_version_lower_bound"] = json::array{json::value(file.cuda)};
  if (!sm.empty()) nvidia["sm_arch"] = std::move(sm);
  json::object props;
  if (!nvidia.empty()) props["nvidia"] = std::move(nvidia);
  VariantOfFile out{"", json::serialize(props)};
  label = real.empty() && !v.empty() ? "sm" + v : label + v;
  if (label.empty()) label = file.cuda.empty() ? "null" : "cu" + wheel::NoDot(file.cuda);
  if (label.size() > kMaxLabel) {
    const std::string hash = Sha256Hex(out.properties_json).substr(0, 4);
    if (real.empty()) {
      label = "smv." + hash;
    } else {
      auto cc = [](const std::pair<int, int>& major_minor) {
        return std::to_string(major_minor.first) + std::to_string(major_minor.second);
      };
      label = "sm" + cc(*real.begin()) + "to" + cc(*real.rbegin()) + "." + hash;
    }
  }
  out.label = label;
  return out;
}

Result<VariantWheels::File> VariantWheels::Get(IndexCatalog& catalog, const IndexFile& file,
                                               const std::string& label,
                                               const std::string& variant_json) {
  const std::string key = file.sha256 + "/" + label;
  {
    std::lock_guard lock(mu_);
    if (auto it = made_.find(key); it != made_.end() && fs::Exists(it->second.path)) {
      return it->second;
    }
  }
  if (dir_.empty()) return Status::Unavailable("farmd keeps no variant wheels (no directory)");
  std::lock_guard make(make_mu_);
  const std::string dir = dir_ + "/" + file.sha256 + "-" + label;
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir, 0700));
  // MakeVariantWheel reads the tags from the file name, which the blob's path lacks.
  FARM_ASSIGN_OR_RETURN(std::string blob, catalog.deps().blobs->LocalPath(file.sha256));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir + "/source", 0700));
  const std::string named = dir + "/source/" + file.filename;
  std::error_code ec;
  std::filesystem::remove(named, ec);
  std::filesystem::create_symlink(blob, named, ec);
  if (ec) return Status::Internal("linking " + named + ": " + ec.message());
  auto made = wheel::MakeVariantWheel(named, label, variant_json, dir);
  std::filesystem::remove(named, ec);
  if (!made.ok()) return made.status();
  File out{made->filename, "", 0, made->path};
  FARM_ASSIGN_OR_RETURN(out.sha256, Sha256FileHex(out.path, &out.size));
  std::lock_guard lock(mu_);
  made_[key] = out;
  return out;
}

std::optional<Response> HandleVariantIndex(IndexCatalog& catalog, VariantWheels& wheels,
                                           const Request& req) {
  std::string_view path = req.path;
  if (!path.starts_with(kPrefix)) return std::nullopt;
  if (req.method != "GET" && req.method != "HEAD") {
    return ErrorResponse(Status::Unimplemented("method not allowed"));
  }
  std::string_view rest = path.substr(kPrefix.size());
  size_t slash = rest.find('/');
  std::string variant(rest.substr(0, slash));
  bool valid = !variant.empty() && variant.size() <= 64 &&
               std::all_of(variant.begin(), variant.end(), [](char c) {
                 return std::islower(static_cast<unsigned char>(c)) ||
                        std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-';
               });
  if (!valid || slash == rest.npos) {
    return ErrorResponse(
        Status::NotFound("variant wheels are under /variants/<variant>/simple/, "
                         "e.g. /variants/cu130/simple/"));
  }
  rest = rest.substr(slash + 1);
  auto files = catalog.Files(variant);
  if (!files.ok()) return ErrorResponse(files.status());
  if (files->empty()) return ErrorResponse(Status::NotFound("no variant " + variant));
  std::vector<VariantEntry> entries = VariantEntries(*files);
  const std::string base = std::string(kPrefix) + variant + "/";
  if (rest.starts_with("files/")) return VariantFile(catalog, wheels, entries, rest.substr(6));
  if (rest == "simple") return Redirect(301, base + "simple/");
  if (!rest.starts_with("simple/")) return ErrorResponse(Status::NotFound("no route " + req.path));
  Negotiated n = NegotiateIndexFormat(req.accept);
  if (!n.acceptable) return ErrorResponse(Status::InvalidArgument("unacceptable Accept"));
  std::string name(rest.substr(7));
  if (name.empty()) return VariantProjectList(n, entries);
  if (!name.ends_with('/'))
    return Redirect(301, base + "simple/" + wheel::NormalizeProjectName(name) + "/");
  name.pop_back();
  if (name.find('/') != std::string::npos)
    return ErrorResponse(Status::NotFound("no project " + name));
  std::string normalized = wheel::NormalizeProjectName(name);
  if (normalized != name) return Redirect(301, base + "simple/" + normalized + "/");
  return VariantProjectPage(catalog, wheels, n, base, normalized, entries);
}

}  // namespace farm::http
