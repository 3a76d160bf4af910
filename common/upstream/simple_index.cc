#include "common/upstream/simple_index.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "common/log.h"
#include "common/strings.h"
#include "common/wheel/wheel_name.h"

namespace farm::upstream {
namespace {

namespace json = boost::json;

// "sha256=<hex>" fragments and attribute values; "" unless it is a valid sha256.
std::string Sha256Of(const std::string& text) {
  std::string prefix = "sha256=";
  if (text.rfind(prefix, 0) != 0) return "";
  std::string hex = AsciiLower(text.substr(prefix.size()));
  return IsSha256Hex(hex) ? hex : "";
}

std::string DecodeEntities(const std::string& in) {
  static const std::map<std::string, std::string> kNamed = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}, {"#39", "'"}};
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    size_t semi = in[i] == '&' ? in.find(';', i) : std::string::npos;
    if (semi == std::string::npos || semi - i > 10) {
      out += in[i];
      continue;
    }
    std::string name = in.substr(i + 1, semi - i - 1);
    auto named = kNamed.find(name);
    if (named != kNamed.end()) {
      out += named->second;
    } else if (name.size() > 1 && name[0] == '#') {
      bool hex = name[1] == 'x' || name[1] == 'X';
      long code = std::strtol(name.c_str() + (hex ? 2 : 1), nullptr, hex ? 16 : 10);
      if (code <= 0 || code > 0x7f) {  // index attributes are ASCII; keep others verbatim
        out += in.substr(i, semi - i + 1);
      } else {
        out += static_cast<char>(code);
      }
    } else {
      out += in.substr(i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

// Splits "url#fragment".
void SplitFragment(const std::string& href, std::string* url, std::string* fragment) {
  size_t hash = href.find('#');
  *url = href.substr(0, hash);
  *fragment = hash == std::string::npos ? "" : href.substr(hash + 1);
}

// Parses the attributes of a tag body (what follows "<a" up to '>'). Names lower case.
std::map<std::string, std::string> ParseAttributes(const std::string& tag, bool* has_yanked) {
  std::map<std::string, std::string> attrs;
  size_t i = 0;
  while (i < tag.size()) {
    while (i < tag.size() && (std::isspace(static_cast<unsigned char>(tag[i])) || tag[i] == '/'))
      ++i;
    size_t start = i;
    while (i < tag.size() && tag[i] != '=' && !std::isspace(static_cast<unsigned char>(tag[i])))
      ++i;
    std::string name = AsciiLower(tag.substr(start, i - start));
    if (name.empty()) break;
    while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
    std::string value;
    if (i < tag.size() && tag[i] == '=') {
      ++i;
      while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
      if (i < tag.size() && (tag[i] == '"' || tag[i] == '\'')) {
        char quote = tag[i++];
        size_t end = tag.find(quote, i);
        if (end == std::string::npos) end = tag.size();
        value = tag.substr(i, end - i);
        i = end + 1;
      } else {
        size_t vstart = i;
        while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
        value = tag.substr(vstart, i - vstart);
      }
    }
    if (name == "data-yanked") *has_yanked = true;
    attrs.emplace(name, DecodeEntities(value));
  }
  return attrs;
}

Result<IndexFile> FileFromJson(const json::object& f, const std::string& page_url) {
  IndexFile file;
  const json::value* name = f.if_contains("filename");
  const json::value* url = f.if_contains("url");
  if (name == nullptr || !name->is_string() || url == nullptr || !url->is_string()) {
    return Status::InvalidArgument("index entry without filename or url");
  }
  file.filename = std::string(name->as_string());
  std::string ref, fragment;
  SplitFragment(std::string(url->as_string()), &ref, &fragment);
  FARM_ASSIGN_OR_RETURN(file.url, ResolveUrl(page_url, ref));
  if (const json::value* hashes = f.if_contains("hashes"); hashes && hashes->is_object()) {
    if (const json::value* h = hashes->as_object().if_contains("sha256"); h && h->is_string()) {
      std::string hex = AsciiLower(std::string(h->as_string()));
      if (IsSha256Hex(hex)) file.sha256 = hex;
    }
  }
  if (const json::value* size = f.if_contains("size"); size && size->is_int64()) {
    file.size = size->as_int64() >= 0 ? size->as_int64() : -1;
  }
  if (const json::value* rp = f.if_contains("requires-python"); rp && rp->is_string()) {
    file.requires_python = std::string(rp->as_string());
  }
  if (const json::value* t = f.if_contains("upload-time");
      t && t->is_string() && t->as_string().size() <= 64) {
    file.upload_time = std::string(t->as_string());
  }
  if (const json::value* y = f.if_contains("yanked")) {
    if (y->is_bool()) file.yanked = y->as_bool();
    if (y->is_string()) {
      file.yanked = true;
      file.yanked_reason = std::string(y->as_string());
    }
  }
  for (const char* key : {"core-metadata", "dist-info-metadata", "data-dist-info-metadata"}) {
    const json::value* m = f.if_contains(key);
    if (m && m->is_object()) {
      if (const json::value* h = m->as_object().if_contains("sha256"); h && h->is_string()) {
        std::string hex = AsciiLower(std::string(h->as_string()));
        if (IsSha256Hex(hex)) file.core_metadata_sha256 = hex;
      }
    }
    if (!file.core_metadata_sha256.empty()) break;
  }
  return file;
}

// The tags of `python` ("cp311") with ABI `abi` on every platform of `platforms`.
void AddTags(const std::string& python, const std::string& abi,
             const std::vector<std::string>& platforms, std::vector<std::string>* out) {
  for (const std::string& platform : platforms) out->push_back(python + "-" + abi + "-" + platform);
}

}  // namespace

bool IsSha256Hex(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> ResolveUrl(const std::string& base, const std::string& ref) {
  // RFC 3986 section 5.2, without normalising percent-encoding: PyTorch's index links
  // "%2B" for the '+' of a local version, and its storage tells the two apart.
  if (!IsHttpUrl(base)) {
    return Status::InvalidArgument("base URL is not http(s): " + log::RedactUrlCredentials(base));
  }
  std::string target = ref.substr(0, ref.find('#'));
  size_t scheme_end = base.find("://") + 3;
  size_t path_start = base.find('/', scheme_end);
  std::string origin = base.substr(0, path_start);
  std::string base_path = path_start == std::string::npos ? "/" : base.substr(path_start);
  base_path = base_path.substr(0, base_path.find_first_of("?#"));
  std::string out;
  size_t colon = target.find(':');
  if (colon != std::string::npos && colon < target.find_first_of("/?")) {
    out = target;  // absolute (any scheme; checked below)
  } else if (target.rfind("//", 0) == 0) {
    out = base.substr(0, scheme_end - 2) + target;
  } else if (target.empty()) {
    out = origin + base_path;
  } else if (target[0] == '?') {
    out = origin + base_path + target;
  } else {
    std::string path =
        target[0] == '/' ? target : base_path.substr(0, base_path.rfind('/') + 1) + target;
    std::string query;
    if (size_t q = path.find('?'); q != std::string::npos) {
      query = path.substr(q);
      path = path.substr(0, q);
    }
    std::vector<std::string> segments;
    size_t i = 1;
    while (i <= path.size()) {
      size_t slash = path.find('/', i);
      std::string seg = path.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
      bool last = slash == std::string::npos;
      if (seg == "..") {
        if (!segments.empty()) segments.pop_back();
        if (last) segments.push_back("");
      } else if (seg == ".") {
        if (last) segments.push_back("");
      } else {
        segments.push_back(seg);
      }
      if (last) break;
      i = slash + 1;
    }
    std::string joined;
    for (const std::string& seg : segments) joined += "/" + seg;
    out = origin + (joined.empty() ? "/" : joined) + query;
  }
  if (!IsHttpUrl(out))
    return Status::InvalidArgument("link is not an http(s) URL: " +
                                   log::RedactUrlCredentials(out.substr(0, 200)));
  return out;
}

Result<std::vector<IndexFile>> ParseProjectJson(const std::string& body,
                                                const std::string& page_url) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) return Status::InvalidArgument("index page is not a JSON object");
  const json::value* files = doc.as_object().if_contains("files");
  if (files == nullptr || !files->is_array()) {
    return Status::InvalidArgument("index page has no files array");
  }
  std::vector<IndexFile> out;
  for (const json::value& f : files->as_array()) {
    if (!f.is_object()) return Status::InvalidArgument("index file entry is not an object");
    FARM_ASSIGN_OR_RETURN(IndexFile file, FileFromJson(f.as_object(), page_url));
    out.push_back(std::move(file));
  }
  return out;
}

Result<std::vector<IndexFile>> ParseProjectHtml(const std::string& body,
                                                const std::string& page_url) {
  std::vector<IndexFile> out;
  std::string lower = AsciiLower(body);
  for (size_t at = lower.find("<a"); at != std::string::npos; at = lower.find("<a", at + 2)) {
    if (at + 2 >= lower.size() || !std::isspace(static_cast<unsigned char>(lower[at + 2]))) {
      continue;
    }
    size_t close = lower.find('>', at);
    size_t end = close == std::string::npos ? close : lower.find("</a>", close);
    if (close == std::string::npos || end == std::string::npos) break;
    bool has_yanked = false;
    auto attrs = ParseAttributes(body.substr(at + 2, close - at - 2), &has_yanked);
    auto href = attrs.find("href");
    if (href == attrs.end()) continue;
    IndexFile file;
    file.filename = DecodeEntities(body.substr(close + 1, end - close - 1));
    std::string ref, fragment;
    SplitFragment(href->second, &ref, &fragment);
    FARM_ASSIGN_OR_RETURN(file.url, ResolveUrl(page_url, ref));
    file.sha256 = Sha256Of(fragment);
    if (auto rp = attrs.find("data-requires-python"); rp != attrs.end()) {
      file.requires_python = rp->second;
    }
    file.yanked = has_yanked;
    if (has_yanked) file.yanked_reason = attrs["data-yanked"];
    for (const char* key : {"data-core-metadata", "data-dist-info-metadata"}) {
      if (auto m = attrs.find(key); m != attrs.end() && file.core_metadata_sha256.empty()) {
        file.core_metadata_sha256 = Sha256Of(m->second);
      }
    }
    out.push_back(std::move(file));
    at = end;
  }
  return out;
}

std::string ProjectPageUrl(const std::string& index_url, const std::string& project) {
  std::string base = index_url;
  if (base.empty() || base.back() != '/') base += '/';
  return base + wheel::NormalizeProjectName(project) + "/";
}

Result<std::vector<IndexFile>> ListProjectFiles(Fetcher& fetcher, const std::string& index_url,
                                                const std::string& project) {
  std::string page_url = ProjectPageUrl(index_url, project);
  FARM_ASSIGN_OR_RETURN(FetchedPage page,
                        fetcher.GetPage(page_url, kAcceptIndex, kMaxIndexPageBytes));
  return ParseProjectPage(page);
}

Result<std::vector<IndexFile>> ParseProjectPage(const FetchedPage& page) {
  const std::string& page_url = page.url;
  if (page.content_type == "application/vnd.pypi.simple.v1+json") {
    return ParseProjectJson(page.body, page.url);
  }
  if (page.content_type == "application/vnd.pypi.simple.v1+html" ||
      page.content_type == "text/html" || page.content_type.empty()) {
    return ParseProjectHtml(page.body, page.url);
  }
  return Status::InvalidArgument(log::RedactUrlCredentials(page_url) +
                                 " answered with an unknown content type '" + page.content_type +
                                 "'");
}

std::vector<std::string> SupportedTags(const TargetPython& target) {
  int major = 3, minor = 0, glibc_major = 2, glibc_minor = 17;
  std::sscanf(target.version.c_str(), "%d.%d", &major, &minor);
  std::sscanf(target.glibc.c_str(), "%d.%d", &glibc_major, &glibc_minor);
  std::vector<std::string> platforms;
  for (int m = glibc_minor; m >= 5 && glibc_major == 2; --m) {
    platforms.push_back("manylinux_2_" + std::to_string(m) + "_" + target.arch);
    if (m == 17) platforms.push_back("manylinux2014_" + target.arch);
    if (m == 12) platforms.push_back("manylinux2010_" + target.arch);
    if (m == 5) platforms.push_back("manylinux1_" + target.arch);
  }
  platforms.push_back("linux_" + target.arch);
  std::string cp = "cp" + std::to_string(major) + std::to_string(minor);
  std::vector<std::string> tags;
  AddTags(cp, cp, platforms, &tags);
  for (int m = minor; m >= 2; --m) {
    AddTags("cp" + std::to_string(major) + std::to_string(m), "abi3", platforms, &tags);
  }
  AddTags(cp, "none", platforms, &tags);
  for (int m = minor; m >= 0; --m) {
    AddTags("py" + std::to_string(major) + std::to_string(m), "none", platforms, &tags);
  }
  AddTags("py" + std::to_string(major), "none", platforms, &tags);
  tags.push_back(cp + "-none-any");
  for (int m = minor; m >= 0; --m)
    tags.push_back("py" + std::to_string(major) + std::to_string(m) + "-none-any");
  tags.push_back("py" + std::to_string(major) + "-none-any");
  return tags;
}

Result<IndexFile> SelectWheel(const std::vector<IndexFile>& files, const std::string& project,
                              const std::string& version, const TargetPython& target,
                              std::string* yanked_note) {
  std::vector<std::string> tags = SupportedTags(target);
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < tags.size(); ++i) rank.emplace(tags[i], i);
  std::string want_name = wheel::NormalizeProjectName(project);
  std::string want_version = wheel::NormalizeVersion(version);
  std::set<std::string> versions;
  const IndexFile* best = nullptr;
  size_t best_rank = tags.size();
  for (const IndexFile& file : files) {
    Result<wheel::WheelFilename> parsed = wheel::ParseWheelFilename(file.filename);
    if (!parsed.ok() || wheel::NormalizeProjectName(parsed->name) != want_name) continue;
    versions.insert(parsed->version);
    if (wheel::NormalizeVersion(parsed->version) != want_version || file.sha256.empty()) continue;
    for (const std::string& tag : parsed->ExpandedTags()) {
      auto r = rank.find(tag);
      if (r != rank.end() && r->second < best_rank) {
        best = &file;
        best_rank = r->second;
      }
    }
  }
  if (best == nullptr) {
    std::string have;
    for (const std::string& v : versions) have += (have.empty() ? "" : ", ") + v;
    return Status::NotFound("no wheel of " + project + "==" + version + " with a sha256 for " +
                            "CPython " + target.version + " on " + target.arch +
                            " (the index has: " + (have.empty() ? "nothing" : have) + ")");
  }
  if (best->yanked && yanked_note != nullptr) {
    *yanked_note = best->filename + " is yanked" +
                   (best->yanked_reason.empty() ? "" : " (" + best->yanked_reason + ")") +
                   "; used because it is pinned exactly";
  }
  return *best;
}

}  // namespace farm::upstream
