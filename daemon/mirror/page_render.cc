#include "daemon/mirror/page_render.h"

#include <boost/json.hpp>
#include <set>

#include "common/httpc/http_util.h"
#include "common/utf8.h"
#include "common/wheel/wheel_name.h"

namespace farm::mirror {
namespace {

namespace json = boost::json;

std::string FileUrl(const std::string& files_base, const upstream::IndexFile& f) {
  return files_base + f.sha256 + "/" + httpc::EncodePath(f.filename);
}

json::object FileJson(const upstream::IndexFile& f, const std::string& url,
                      const std::string& metadata) {
  json::object o;
  o["filename"] = f.filename;
  o["url"] = url;
  o["hashes"] = json::object{{"sha256", f.sha256}};
  if (f.size >= 0) o["size"] = f.size;
  if (!f.requires_python.empty()) o["requires-python"] = f.requires_python;
  if (!f.upload_time.empty()) o["upload-time"] = f.upload_time;
  if (f.yanked) {
    o["yanked"] = f.yanked_reason.empty() ? json::value(true) : json::value(f.yanked_reason);
  } else {
    o["yanked"] = false;
  }
  if (!metadata.empty()) o["core-metadata"] = json::object{{"sha256", metadata}};
  return o;
}

std::string FileAnchor(const upstream::IndexFile& f, const std::string& url,
                       const std::string& metadata) {
  std::string a = "<a href=\"" + EscapeMarkup(url) + "#sha256=" + f.sha256 + "\"";
  if (!f.requires_python.empty()) {
    a += " data-requires-python=\"" + EscapeMarkup(f.requires_python) + "\"";
  }
  if (!metadata.empty()) {
    a += " data-core-metadata=\"sha256=" + metadata +
         "\" data-dist-info-metadata=\"sha256=" + metadata + "\"";
  }
  if (f.yanked) {
    a += f.yanked_reason.empty() ? " data-yanked"
                                 : " data-yanked=\"" + EscapeMarkup(f.yanked_reason) + "\"";
  }
  return a + ">" + EscapeMarkup(f.filename) + "</a><br/>\n";
}

}  // namespace

std::string RenderProjectPage(const std::string& project,
                              const std::vector<upstream::IndexFile>& files, bool json,
                              const std::string& files_base, const MetadataDigest& metadata) {
  if (json) {
    json::array list;
    std::set<std::string> versions;
    for (const upstream::IndexFile& f : files) {
      list.push_back(FileJson(f, FileUrl(files_base, f), metadata ? metadata(f) : ""));
      if (Result<wheel::WheelFilename> w = wheel::ParseWheelFilename(f.filename); w.ok()) {
        versions.insert(w->version);
      }
    }
    json::array vs;
    for (const std::string& v : versions) vs.push_back(json::value(v));
    return json::serialize(json::object{{"meta", json::object{{"api-version", "1.1"}}},
                                        {"name", project},
                                        {"versions", vs},
                                        {"files", list}});
  }
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
      "content=\"1.1\"><title>Links for " +
      EscapeMarkup(project) + "</title></head><body>\n";
  for (const upstream::IndexFile& f : files) {
    html += FileAnchor(f, FileUrl(files_base, f), metadata ? metadata(f) : "");
  }
  return html + "</body></html>\n";
}

}  // namespace farm::mirror
