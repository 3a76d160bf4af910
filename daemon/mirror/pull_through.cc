#include "daemon/mirror/pull_through.h"

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <regex>
#include <set>

#include "common/archive/entry_rules.h"
#include "common/fs.h"
#include "common/httpc/http_util.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "common/wheel/wheel_name.h"
#include "daemon/mirror/preload.h"

namespace farm::mirror {
namespace {

namespace json = boost::json;
constexpr int64_t kMaxTreeFile = int64_t{8} << 20;

std::string ProjectOf(const std::string& filename) {
  Result<std::string> project = ProjectOfDistribution(filename);
  return project.ok() ? *project : "";
}

bool IsSmallTreeFile(const std::string& relative) {
  return relative.empty() || relative.back() == '/' ||
         (relative.size() > 5 && relative.compare(relative.size() - 5, 5, ".json") == 0) ||
         relative == "SHA256SUMS" ||
         (relative.size() > 11 && relative.compare(relative.size() - 11, 11, "/SHA256SUMS") == 0);
}

}  // namespace

std::string RenderProjectPage(const std::string& project,
                              const std::vector<upstream::IndexFile>& files, bool json,
                              const std::string& files_base) {
  if (json) {
    json::array list;
    std::set<std::string> versions;
    for (const upstream::IndexFile& f : files) {
      json::object o;
      o["filename"] = f.filename;
      o["url"] = files_base + f.sha256 + "/" + httpc::EncodePath(f.filename);
      o["hashes"] = json::object{{"sha256", f.sha256}};
      if (f.size >= 0) o["size"] = f.size;
      if (!f.requires_python.empty()) o["requires-python"] = f.requires_python;
      if (f.yanked) {
        o["yanked"] = f.yanked_reason.empty() ? json::value(true) : json::value(f.yanked_reason);
      } else {
        o["yanked"] = false;
      }
      list.push_back(std::move(o));
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
    html += "<a href=\"" +
            EscapeMarkup(files_base + f.sha256 + "/" + httpc::EncodePath(f.filename)) +
            "#sha256=" + f.sha256 + "\"";
    if (!f.requires_python.empty())
      html += " data-requires-python=\"" + EscapeMarkup(f.requires_python) + "\"";
    if (f.yanked)
      html += f.yanked_reason.empty() ? " data-yanked"
                                      : " data-yanked=\"" + EscapeMarkup(f.yanked_reason) + "\"";
    html += ">" + EscapeMarkup(f.filename) + "</a><br/>\n";
  }
  return html + "</body></html>\n";
}

PullThroughCache::PullThroughCache(MirrorOptions options, upstream::Fetcher* fetcher,
                                   store::BlobStore* blobs, const Clock* clock)
    : options_(std::move(options)), fetcher_(fetcher), blobs_(blobs), clock_(clock) {}

int64_t PullThroughCache::upstream_downloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return downloads_;
}

void PullThroughCache::Learn(const std::string& sha256, const KnownFile& file) {
  std::lock_guard<std::mutex> lock(mu_);
  KnownFile& known = known_[sha256];
  if (known.url.empty()) known = file;
}

Result<std::vector<upstream::IndexFile>> PullThroughCache::ProjectFiles(const std::string& index,
                                                                        const std::string& project,
                                                                        bool revalidate) {
  Result<std::vector<upstream::IndexFile>> upstream =
      UpstreamProjectFiles(index, project, revalidate);
  std::vector<upstream::IndexFile> preloaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = preloaded_.find(index + "/" + project); it != preloaded_.end()) {
      preloaded = it->second;
    }
  }
  if (preloaded.empty()) return upstream;
  // Whatever upstream answered (nothing, a 404, an error), the preloaded files are served.
  std::vector<upstream::IndexFile> files;
  if (upstream.ok()) files = std::move(upstream).value();
  std::map<std::string, std::string> listed;  // filename -> sha256
  for (const upstream::IndexFile& f : files) listed[f.filename] = f.sha256;
  for (const upstream::IndexFile& p : preloaded) {
    auto same = listed.find(p.filename);
    if (same == listed.end()) {
      files.push_back(p);
    } else if (same->second != p.sha256) {
      log::Warn("upstream index " + index + " lists " + p.filename + " as sha256 " + same->second +
                ", not the preloaded " + p.sha256 + ": serving upstream's");
    }
  }
  return files;
}

Result<std::vector<upstream::IndexFile>> PullThroughCache::UpstreamProjectFiles(
    const std::string& index, const std::string& project, bool revalidate) {
  auto upstream_url = options_.indexes.find(index);
  if (upstream_url == options_.indexes.end()) return Status::NotFound("no index " + index);
  std::string key = index + "/" + project;
  std::string etag;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto page = pages_.find(key);
    if (page != pages_.end()) {
      if (!revalidate && clock_->SteadyMs() - page->second.fetched_ms < options_.page_ttl_ms) {
        return page->second.files;
      }
      etag = page->second.etag;
    }
  }
  std::string page_url = upstream::ProjectPageUrl(upstream_url->second, project);
  Result<upstream::FetchedPage> got = fetcher_->GetPageIfChanged(
      page_url, upstream::kAcceptIndex, upstream::kMaxIndexPageBytes, etag);
  if (got.ok() && got->not_modified) {
    std::lock_guard<std::mutex> lock(mu_);
    auto page = pages_.find(key);
    if (page != pages_.end()) {
      page->second.fetched_ms = clock_->SteadyMs();
      return page->second.files;
    }
    got = fetcher_->GetPage(page_url, upstream::kAcceptIndex, upstream::kMaxIndexPageBytes);
  }
  Result<std::vector<upstream::IndexFile>> fetched =
      got.ok() ? upstream::ParseProjectPage(*got)
               : Result<std::vector<upstream::IndexFile>>(got.status());
  if (fetched.ok()) {
    std::vector<upstream::IndexFile> files;
    for (const upstream::IndexFile& f : *fetched) {
      if (f.sha256.empty()) continue;  // cannot be served by digest
      Learn(f.sha256, {f.url, f.filename, f.size, index});
      files.push_back(f);
    }
    std::lock_guard<std::mutex> lock(mu_);
    pages_[key] = {files, clock_->SteadyMs(), got->etag};
    return files;
  }
  if (fetched.status().code() != StatusCode::kUnavailable &&
      fetched.status().code() != StatusCode::kDeadlineExceeded) {
    return fetched.status();
  }
  // Upstream unreachable: the last page seen, else what is stored for this project.
  std::lock_guard<std::mutex> lock(mu_);
  if (auto page = pages_.find(key); page != pages_.end()) return page->second.files;
  std::vector<upstream::IndexFile> files;
  for (const auto& [sha, known] : known_) {
    if (known.source == index && ProjectOf(known.filename) == project && blobs_->Contains(sha)) {
      upstream::IndexFile f;
      f.filename = known.filename;
      f.sha256 = sha;
      f.size = known.size;
      files.push_back(f);
    }
  }
  if (files.empty()) return fetched.status();
  return files;
}

Result<MirrorAnswer> PullThroughCache::IndexPage(const std::string& index,
                                                 const std::string& project, bool json,
                                                 const std::string& files_base, bool revalidate) {
  std::string name = wheel::NormalizeProjectName(project);
  FARM_ASSIGN_OR_RETURN(std::vector<upstream::IndexFile> files,
                        ProjectFiles(index, name, revalidate));
  MirrorAnswer answer;
  answer.content_type =
      json ? "application/vnd.pypi.simple.v1+json" : "application/vnd.pypi.simple.v1+html";
  answer.body = RenderProjectPage(name, files, json, files_base);
  return answer;
}

Status PullThroughCache::EnsureFile(const std::string& sha256) {
  if (!upstream::IsSha256Hex(sha256))
    return Status::InvalidArgument("not a sha256: " + sha256.substr(0, 80));
  if (blobs_->Contains(sha256)) return Status::Ok();
  std::shared_ptr<Flight> flight;
  bool leader = false;
  KnownFile file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto known = known_.find(sha256);
    if (known == known_.end() || known->second.url.empty()) {
      return Status::NotFound("the farm has not seen " + sha256 + " listed upstream");
    }
    file = known->second;
    auto it = flights_.find(sha256);
    if (it == flights_.end()) {
      flight = std::make_shared<Flight>();
      flights_[sha256] = flight;
      leader = true;
    } else {
      flight = it->second;
    }
  }
  if (!leader) {
    std::unique_lock<std::mutex> lock(flight->mu);
    flight->done_cv.wait(lock, [&] { return flight->done; });
    return flight->status;
  }
  Status status = blobs_->Contains(sha256) ? Status::Ok() : Download(sha256, file);
  {
    std::lock_guard<std::mutex> lock(mu_);
    flights_.erase(sha256);
  }
  {
    std::lock_guard<std::mutex> lock(flight->mu);
    flight->done = true;
    flight->status = status;
  }
  flight->done_cv.notify_all();
  return status;
}

Status PullThroughCache::Download(const std::string& sha256, const KnownFile& file) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(options_.staging_dir));
  std::string temp = options_.staging_dir + "/mirror-" + RandomHex(8);
  FILE* out = std::fopen(temp.c_str(), "wb");
  if (out == nullptr) return Status::Internal("cannot create " + temp);
  Sha256 hasher;
  int64_t bytes = 0;
  Status fetched = fetcher_->Download(file.url, [&](std::string_view block) -> Status {
    bytes += static_cast<int64_t>(block.size());
    if (file.size >= 0 && bytes > file.size) {
      return Status::DataLoss(file.filename + " from " + file.url + " is larger than listed");
    }
    hasher.Update(block);
    if (std::fwrite(block.data(), 1, block.size(), out) != block.size()) {
      return Status::ResourceExhausted("cannot write " + temp);
    }
    return Status::Ok();
  });
  bool closed = std::fclose(out) == 0;
  auto fail = [&](Status s) {
    std::remove(temp.c_str());
    return s;
  };
  if (!fetched.ok()) return fail(fetched);
  if (!closed) return fail(Status::ResourceExhausted("cannot write " + temp));
  std::string got = hasher.HexDigest();
  if (got != sha256 || (file.size >= 0 && bytes != file.size)) {
    return fail(Status::DataLoss("checksum mismatch for " + file.filename + " from " + file.url +
                                 ": expected sha256 " + sha256 + ", got " + got +
                                 "; refused, nothing stored"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++downloads_;
  }
  Result<std::unique_ptr<store::BlobWriter>> writer = blobs_->BeginWrite(bytes, sha256);
  if (!writer.ok()) return fail(writer.status());
  FILE* in = std::fopen(temp.c_str(), "rb");
  if (in == nullptr) return fail(Status::Internal("cannot reopen " + temp));
  std::string buffer(1 << 20, '\0');
  Status s;
  while (s.ok()) {
    size_t n = std::fread(buffer.data(), 1, buffer.size(), in);
    if (n == 0) break;
    s = (*writer)->Append(std::string_view(buffer.data(), n));
  }
  std::fclose(in);
  if (s.ok()) s = (*writer)->Commit();
  return fail(s);
}

void PullThroughCache::LearnFromTreeFile(const std::string& tree, const std::string& base,
                                         const std::string& relative, const std::string& body) {
  std::string dir =
      relative.substr(0, relative.rfind('/') == std::string::npos ? 0 : relative.rfind('/') + 1);
  auto learn = [&](const std::string& rel, const std::string& sha, int64_t size) {
    std::string rule;
    if (!upstream::IsSha256Hex(sha) || !archives::CheckEntryName(rel, &rule).empty()) return;
    Learn(sha, {base + httpc::EncodePath(rel), rel.substr(rel.rfind('/') + 1), size, tree});
    std::lock_guard<std::mutex> lock(mu_);
    tree_paths_[tree + "/" + rel] = sha;
  };
  if (relative.size() > 5 && relative.compare(relative.size() - 5, 5, ".json") == 0) {
    // A manifest that does not parse teaches nothing; serving it is the client's problem.
    (void)VisitManifestArchives(body, [&](const std::string& rel, const std::string& sha,
                                          int64_t size) { learn(dir + rel, sha, size); });
    return;
  }
  static const std::regex line_re(R"(([0-9a-f]{64})\s+\*?([A-Za-z0-9._+-]+))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), line_re);
       it != std::sregex_iterator(); ++it) {
    learn(dir + std::string((*it)[2]), (*it)[1], -1);
  }
}

Result<MirrorAnswer> PullThroughCache::TreeFile(const std::string& tree,
                                                const std::string& relative) {
  auto upstream_url = options_.trees.find(tree);
  if (upstream_url == options_.trees.end()) return Status::NotFound("no tree " + tree);
  std::string rule;
  std::string plain = relative.empty() || relative.back() != '/'
                          ? relative
                          : relative.substr(0, relative.size() - 1);
  if (!plain.empty() && !archives::CheckEntryName(plain, &rule).empty()) {
    return Status::InvalidArgument("bad path " + relative.substr(0, 200));
  }
  std::string base = upstream_url->second;
  if (base.empty() || base.back() != '/') base += '/';
  std::string key = tree + "/" + relative;
  std::string sha;
  int64_t size = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = tree_paths_.find(key); it != tree_paths_.end()) {
      sha = it->second;
      size = known_[sha].size;
    }
  }
  if (!sha.empty()) {
    FARM_RETURN_IF_ERROR(EnsureFile(sha));
    return MirrorAnswer{"application/octet-stream", "", sha, size};
  }
  if (!IsSmallTreeFile(relative)) {
    return Status::NotFound(relative +
                            " is not listed by a manifest or SHA256SUMS the farm has served");
  }
  std::string content_type = relative.empty() || relative.back() == '/'    ? "text/html"
                             : relative.find(".json") != std::string::npos ? "application/json"
                                                                           : "text/plain";
  const bool listing = relative.empty();
  std::optional<std::string> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto cached = small_.find(key);
    if (cached != small_.end() &&
        clock_->SteadyMs() - cached->second.second < options_.page_ttl_ms) {
      fresh = cached->second.first;
    }
  }
  if (fresh) {
    return MirrorAnswer{content_type, listing ? ListingWithPreloads(tree, *fresh) : *fresh, "", -1};
  }
  Result<upstream::FetchedPage> page =
      fetcher_->GetPage(base + httpc::EncodePath(relative), "", kMaxTreeFile);
  if (!page.ok()) {
    std::string stale;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto cached = small_.find(key);  // stale beats nothing while upstream is away
      if (cached != small_.end())
        stale = cached->second.first;
      else if (!listing)
        return page.status();
    }
    std::string body = listing ? ListingWithPreloads(tree, stale) : stale;
    if (body.empty()) return page.status();
    return MirrorAnswer{content_type, body, "", -1};
  }
  LearnFromTreeFile(tree, base, relative, page->body);
  {
    std::lock_guard<std::mutex> lock(mu_);
    small_[key] = {page->body, clock_->SteadyMs()};
  }
  return MirrorAnswer{content_type, listing ? ListingWithPreloads(tree, page->body) : page->body,
                      "", -1};
}

Status PullThroughCache::AddPreloaded(const std::string& source, PreloadKind kind,
                                      const std::string& path, const std::string& sha256,
                                      int64_t size) {
  if (!upstream::IsSha256Hex(sha256)) return Status::InvalidArgument("not a sha256");
  std::string rule;
  if (!archives::CheckEntryName(path, &rule).empty()) {
    return Status::InvalidArgument("bad path " + path.substr(0, 200));
  }
  const bool index = kind == PreloadKind::kIndexFile;
  if (index ? options_.indexes.count(source) == 0 : options_.trees.count(source) == 0) {
    return Status::NotFound(std::string("farmd serves no upstream ") +
                            (index ? "index " : "tree ") + source);
  }
  std::string filename = path.substr(path.rfind('/') + 1);
  std::string project;
  if (index) {
    FARM_ASSIGN_OR_RETURN(project, ProjectOfDistribution(path));
  }
  if (!blobs_->Contains(sha256)) return Status::FailedPrecondition(path + " is not stored");
  std::lock_guard<std::mutex> lock(mu_);
  KnownFile& known = known_[sha256];
  if (known.url.empty()) known = KnownFile{"", filename, size, source};
  if (!index) {
    tree_paths_[source + "/" + path] = sha256;
    if (kind == PreloadKind::kManifest) preloaded_manifests_[source].insert(path);
    return Status::Ok();
  }
  std::vector<upstream::IndexFile>& files = preloaded_[source + "/" + project];
  for (const upstream::IndexFile& f : files) {
    if (f.filename == filename) return Status::Ok();
  }
  upstream::IndexFile f;
  f.filename = filename;
  f.sha256 = sha256;
  f.size = size;
  files.push_back(f);
  return Status::Ok();
}

Result<std::string> PullThroughCache::ResolveIndex(const std::string& name_or_url) const {
  if (name_or_url.empty()) {
    if (options_.indexes.size() == 1) return options_.indexes.begin()->first;
    std::string names;
    for (const auto& [name, url] : options_.indexes) names += (names.empty() ? "" : ", ") + name;
    return Status::InvalidArgument("name the index (--index): farmd serves " +
                                   (names.empty() ? std::string("none") : names));
  }
  if (options_.indexes.count(name_or_url) > 0) return name_or_url;
  auto bare = [](std::string u) {
    while (!u.empty() && u.back() == '/') u.pop_back();
    return u;
  };
  for (const auto& [name, url] : options_.indexes) {
    if (bare(url) == bare(name_or_url)) return name;
  }
  return Status::NotFound("farmd serves no index " + name_or_url.substr(0, 200));
}

bool PullThroughCache::ServesTree(const std::string& tree) const {
  return options_.trees.count(tree) > 0;
}

Result<std::string> PullThroughCache::TreePathSha(const std::string& tree,
                                                  const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tree_paths_.find(tree + "/" + path);
  if (it == tree_paths_.end()) return Status::NotFound(tree + "/" + path + " is not preloaded");
  return it->second;
}

std::string PullThroughCache::ListingWithPreloads(const std::string& tree,
                                                  const std::string& upstream) const {
  std::set<std::string> manifests;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = preloaded_manifests_.find(tree); it != preloaded_manifests_.end()) {
      manifests = it->second;
    }
  }
  std::string links;
  for (const std::string& path : manifests) {
    std::string href = "href=\"" + httpc::EncodePath(path) + "\"";
    if (upstream.find(href) != std::string::npos) continue;
    links += "<a " + href + ">" + EscapeMarkup(path) + "</a><br/>\n";
  }
  if (links.empty()) return upstream;
  if (upstream.empty()) {
    return "<!DOCTYPE html>\n<html><head><title>" + EscapeMarkup(tree) + "</title></head><body>\n" +
           links + "</body></html>\n";
  }
  size_t end = upstream.rfind("</body>");
  if (end == std::string::npos) return upstream + links;
  return upstream.substr(0, end) + links + upstream.substr(end);
}

}  // namespace farm::mirror
