#include "cli/index/make_index.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <optional>

#include "cli/export/export_dir.h"
#include "common/fs.h"
#include "common/httpc/http_util.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "common/wheel/metadata/dist_info.h"
#include "common/wheel/wheel_name.h"
#include "common/wheel/zip_stream.h"

namespace farm::cli::index {
namespace {

namespace json = boost::json;

constexpr int64_t kMaxMetadataBytes = int64_t{16} << 20;
constexpr char kMetadataSuffix[] = ".metadata";

// One file the index lists.
struct Listed {
  std::string filename;
  std::string project;  // normalized
  std::string version;
  std::string sha256;
  int64_t size = 0;
  std::string requires_python;
  std::string metadata_sha256;  // "" for an sdist
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The project and version of an sdist "<name>-<version>.tar.gz" (or .zip); false otherwise.
bool ParseSdistName(const std::string& file, std::string* project, std::string* version) {
  std::string stem;
  for (std::string_view ext : {".tar.gz", ".zip"}) {
    if (EndsWith(file, ext)) stem = file.substr(0, file.size() - ext.size());
  }
  size_t dash = stem.rfind('-');
  if (stem.empty() || dash == std::string::npos || dash == 0 || dash + 1 == stem.size()) {
    return false;
  }
  for (char c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' &&
        c != '+' && c != '!') {
      return false;
    }
  }
  *project = wheel::NormalizeProjectName(stem.substr(0, dash));
  *version = stem.substr(dash + 1);
  return true;
}

// The METADATA of the wheel at `path`: the one file "<x>.dist-info/METADATA" at its top.
Result<std::string> WheelMetadata(const std::string& path) {
  std::vector<std::string> found;
  auto is_metadata = [](const std::string& name) {
    size_t slash = name.find('/');
    return slash != std::string::npos && name.find('/', slash + 1) == std::string::npos &&
           EndsWith(name.substr(0, slash), ".dist-info") && name.substr(slash + 1) == "METADATA";
  };
  FARM_ASSIGN_OR_RETURN(wheel::ZipScan scan, wheel::ScanZip(
                                                 path, wheel::ZipLimits{},
                                                 [&](const std::string& name, std::string_view) {
                                                   return is_metadata(name) ? kMaxMetadataBytes : 0;
                                                 },
                                                 [&](wheel::ZipFile&& f) {
                                                   if (is_metadata(f.name) && !f.truncated)
                                                     found.push_back(std::move(f.content));
                                                 }));
  if (!scan.problems.empty()) {
    return Status::InvalidArgument("not a wheel installers accept (" +
                                   scan.problems.front().ToString() + ")");
  }
  if (found.size() != 1) {
    return Status::InvalidArgument("holds " + std::to_string(found.size()) +
                                   " *.dist-info/METADATA files, not one");
  }
  return std::move(found.front());
}

// Writes `metadata` as the wheel's PEP 658 file (unless it holds those bytes already).
Status WriteMetadataFile(const std::string& path, const std::string& metadata) {
  auto existing = fs::ReadFile(path);
  if (existing.ok() && *existing == metadata) return Status::Ok();
  return fs::WriteFileAtomic(path, metadata);
}

// Reads one candidate file of the folder; nullopt with `why` set when it is not listed.
Result<std::optional<Listed>> ReadCandidate(const std::string& dir, const std::string& file,
                                            std::string* why) {
  Listed l{.filename = file};
  const bool is_wheel = EndsWith(file, ".whl");
  if (is_wheel) {
    auto name = wheel::ParseWheelFilename(file);
    if (!name.ok()) {
      *why = name.status().message();
      return std::optional<Listed>();
    }
    l.project = wheel::NormalizeProjectName(name->name);
    l.version = name->version;
  } else if (!ParseSdistName(file, &l.project, &l.version)) {
    *why = "neither a wheel nor an sdist (<name>-<version>.tar.gz or .zip)";
    return std::optional<Listed>();
  }
  const std::string path = dir + "/" + file;
  FARM_ASSIGN_OR_RETURN(l.sha256, Sha256FileHex(path, &l.size));
  if (!is_wheel) return std::optional<Listed>(std::move(l));
  auto metadata = WheelMetadata(path);
  if (!metadata.ok()) {
    *why = metadata.status().message();
    return std::optional<Listed>();
  }
  auto fields = wheel::ParseHeaders(*metadata);
  l.requires_python = wheel::FindHeader(fields, "Requires-Python").value_or("");
  l.metadata_sha256 = Sha256Hex(*metadata);
  FARM_RETURN_IF_ERROR(WriteMetadataFile(path + kMetadataSuffix, *metadata));
  return std::optional<Listed>(std::move(l));
}

// The regular files of `dir` (no link followed), by name; names fit for a URL only.
Result<std::vector<std::string>> FolderFiles(const std::string& dir,
                                             std::vector<std::string>* skipped) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Status::InvalidArgument(dir + " is not a directory farmctl can read");
  std::vector<std::string> out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || name == "simple" || EndsWith(name, kMetadataSuffix)) {
      continue;
    }
    struct stat st {};
    if (lstat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      skipped->push_back(name + ": not a regular file");
      continue;
    }
    bool plain = IsValidUtf8(name) && std::none_of(name.begin(), name.end(), [](char c) {
                   return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '"' ||
                          c == '<' || c == '>' || c == '\\';
                 });
    if (!plain) {
      skipped->push_back(EscapeMarkup(ToValidUtf8(name)) + ": a name no index may carry");
      continue;
    }
    out.push_back(std::move(name));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string ProjectHtml(const std::string& project, const std::vector<Listed>& files) {
  std::string out =
      "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
      "content=\"1.1\"><title>Links for " +
      project + "</title></head>\n<body><h1>Links for " + project + "</h1>\n";
  for (const Listed& f : files) {
    out += "<a href=\"../../" + EscapeMarkup(httpc::EncodePath(f.filename)) +
           "#sha256=" + f.sha256 + "\"";
    if (!f.requires_python.empty()) {
      out += " data-requires-python=\"" + EscapeMarkup(f.requires_python) + "\"";
    }
    if (!f.metadata_sha256.empty()) {
      // Both names: pip 23.0 (Debian 12) reads only the older one.
      out += " data-dist-info-metadata=\"sha256=" + f.metadata_sha256 +
             "\" data-core-metadata=\"sha256=" + f.metadata_sha256 + "\"";
    }
    out += ">" + EscapeMarkup(f.filename) + "</a><br>\n";
  }
  return out + "</body></html>\n";
}

std::string ProjectJson(const std::string& project, const std::vector<Listed>& files) {
  json::array list;
  std::vector<std::string> versions;
  for (const Listed& f : files) {
    json::object o{{"filename", f.filename},
                   {"url", "../../" + httpc::EncodePath(f.filename)},
                   {"hashes", json::object{{"sha256", f.sha256}}},
                   {"size", f.size}};
    if (!f.requires_python.empty()) o["requires-python"] = f.requires_python;
    if (!f.metadata_sha256.empty()) {
      o["core-metadata"] = json::object{{"sha256", f.metadata_sha256}};
      o["dist-info-metadata"] = json::object{{"sha256", f.metadata_sha256}};
    }
    list.push_back(std::move(o));
    if (std::find(versions.begin(), versions.end(), f.version) == versions.end()) {
      versions.push_back(f.version);
    }
  }
  json::array vs(versions.begin(), versions.end());
  return json::serialize(json::object{{"meta", json::object{{"api-version", "1.1"}}},
                                      {"name", project},
                                      {"versions", std::move(vs)},
                                      {"files", std::move(list)}}) +
         "\n";
}

Status WritePages(exporter::ExportDir& out, const std::map<std::string, std::vector<Listed>>& by) {
  std::string root =
      "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
      "content=\"1.1\"><title>Simple index</title></head>\n<body>\n";
  json::array projects;
  for (const auto& [project, files] : by) {
    root += "<a href=\"" + project + "/\">" + project + "</a><br>\n";
    projects.push_back(json::object{{"name", project}});
    FARM_RETURN_IF_ERROR(out.Write(project + "/index.html", ProjectHtml(project, files)));
    FARM_RETURN_IF_ERROR(out.Write(project + "/index.json", ProjectJson(project, files)));
  }
  FARM_RETURN_IF_ERROR(out.Write("index.html", root + "</body></html>\n"));
  return out.Write("index.json",
                   json::serialize(json::object{{"meta", json::object{{"api-version", "1.1"}}},
                                                {"projects", std::move(projects)}}) +
                       "\n");
}

}  // namespace

Result<MadeIndex> MakeIndex(const std::string& dir, bool force) {
  MadeIndex made;
  std::error_code ec;
  const std::string root = std::filesystem::absolute(dir, ec).lexically_normal().string();
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> names, FolderFiles(root, &made.skipped));
  std::map<std::string, std::vector<Listed>> by_project;
  for (const std::string& name : names) {
    std::string why;
    FARM_ASSIGN_OR_RETURN(std::optional<Listed> listed, ReadCandidate(root, name, &why));
    if (!listed) {
      made.skipped.push_back(name + ": " + why);
      continue;
    }
    made.files += 1;
    made.wheels_with_metadata += listed->metadata_sha256.empty() ? 0 : 1;
    by_project[listed->project].push_back(std::move(*listed));
  }
  if (by_project.empty()) {
    return Status::InvalidArgument(root + " holds no wheel or sdist to index" +
                                   (made.skipped.empty() ? "" : " (" + made.skipped.front() + ")"));
  }
  made.simple_dir = root + "/simple";
  std::error_code exists_ec;
  if (!force && std::filesystem::is_directory(made.simple_dir, exists_ec) &&
      !std::filesystem::exists(made.simple_dir + "/" + exporter::kMarkerName, exists_ec) &&
      !std::filesystem::is_empty(made.simple_dir, exists_ec)) {
    return Status::InvalidArgument(made.simple_dir +
                                   " exists and was not written by farmctl index make (it has "
                                   "no " +
                                   std::string(exporter::kMarkerName) +
                                   "): refusing to replace it; --force replaces it");
  }
  FARM_ASSIGN_OR_RETURN(auto out, exporter::ExportDir::Open(made.simple_dir, force));
  FARM_RETURN_IF_ERROR(WritePages(*out, by_project));
  made.projects = static_cast<int>(by_project.size());
  json::object marker{{"kind", "farmctl index make"}, {"files", made.files}};
  FARM_RETURN_IF_ERROR(out->Commit(json::serialize(marker)));
  return made;
}

}  // namespace farm::cli::index
