// PullThroughCache (pull_through.h): pages, trees, preloads and the waiting forms. Files,
// their accounting and eviction are pull_through_files.cc.
#include "daemon/mirror/pull_through.h"

#include <future>
#include <regex>

#include "common/archive/entry_rules.h"
#include "common/httpc/http_util.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/wheel/wheel_name.h"

namespace farm::mirror {
namespace {

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

bool Unreachable(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
}

// Waits for an *Async answer.
Result<MirrorAnswer> Await(const std::function<void(AnswerCallback)>& start) {
  auto promise = std::make_shared<std::promise<Result<MirrorAnswer>>>();
  std::future<Result<MirrorAnswer>> answer = promise->get_future();
  start([promise](Result<MirrorAnswer> r) { promise->set_value(std::move(r)); });
  return answer.get();
}

}  // namespace

PullThroughCache::~PullThroughCache() { Stop(); }

void PullThroughCache::Stop() {
  scheduler_.Stop();
  FlushUses();
}

int64_t PullThroughCache::upstream_downloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_.downloads;
}

MirrorStats PullThroughCache::stats() const {
  MirrorStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = counts_;
    s.stored_bytes = stored_bytes_;
  }
  s.max_bytes = options_.max_bytes;
  s.fetches_running = scheduler_.running();
  s.fetches_queued = scheduler_.queued();
  return s;
}

void PullThroughCache::Schedule(const std::string& url, std::function<void()> run,
                                std::function<void(const Status&)> failed) {
  Status queued = scheduler_.Submit(upstream::UrlAddress(url), std::move(run), [failed] {
    failed(Status::Unavailable("farmd is stopping; the upstream was not asked"));
  });
  if (!queued.ok()) failed(queued);
}

void PullThroughCache::LearnLocked(const std::string& source, const std::string& sha256,
                                   const Listed& listed) {
  Listed& known = listed_[source][sha256];
  std::set<std::string> names = std::move(known.names);
  known = listed;  // the newest listing's URL: an upstream that moved a file is followed
  known.names.insert(names.begin(), names.end());
}

void PullThroughCache::KeepPageLocked(const std::string& key, Page page) {
  pages_[key] = std::move(page);
  while (pages_.size() > options_.max_pages) {
    auto oldest = pages_.begin();
    for (auto it = pages_.begin(); it != pages_.end(); ++it) {
      if (it->second.fetched_ms < oldest->second.fetched_ms) oldest = it;
    }
    // What only that page listed goes with it: memory follows the pages kept.
    const std::string index = oldest->first.substr(0, oldest->first.find('/'));
    auto& listed = listed_[index];
    for (auto it = listed.begin(); it != listed.end();) {
      it = it->second.page == oldest->first ? listed.erase(it) : std::next(it);
    }
    pages_.erase(oldest);
  }
}

Result<std::vector<upstream::IndexFile>> PullThroughCache::ProjectFiles(const std::string& index,
                                                                        const std::string& project,
                                                                        bool revalidate) {
  return WithPreloads(index, project, UpstreamProjectFiles(index, project, revalidate));
}

Result<std::vector<upstream::IndexFile>> PullThroughCache::WithPreloads(
    const std::string& index, const std::string& project,
    Result<std::vector<upstream::IndexFile>> upstream) {
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
  const std::string key = index + "/" + project;
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
    std::lock_guard<std::mutex> lock(mu_);
    for (const upstream::IndexFile& f : *fetched) {
      if (f.sha256.empty()) continue;  // cannot be served by digest
      LearnLocked(index, f.sha256, {f.url, {f.filename}, f.size, f.core_metadata_sha256, key});
      files.push_back(f);
    }
    KeepPageLocked(key, {files, clock_->SteadyMs(), got->etag});
    return files;
  }
  // The page's own text may quote the URL it came from (a parse error does).
  Status failed(fetched.status().code(), log::RedactUrlCredentials(fetched.status().message()));
  if (!Unreachable(failed)) return failed;
  // Upstream unreachable: the last page seen, else what is stored for this project.
  std::lock_guard<std::mutex> lock(mu_);
  if (auto page = pages_.find(key); page != pages_.end()) return page->second.files;
  std::vector<upstream::IndexFile> files = StoredProjectFilesLocked(index, project);
  if (files.empty()) return failed;
  return files;
}

std::vector<upstream::IndexFile> PullThroughCache::StoredProjectFilesLocked(
    const std::string& index, const std::string& project) {
  std::vector<upstream::IndexFile> files;
  auto stored = stored_.find(index);
  if (stored == stored_.end()) return files;
  for (const auto& [sha, s] : stored->second) {
    if (s.preloaded) continue;  // merged by ProjectFiles
    for (const std::string& name : s.names) {
      if (ProjectOf(name) != project || !blobs_->Contains(sha)) continue;
      upstream::IndexFile f;
      f.filename = name;
      f.sha256 = sha;
      f.size = s.size;
      files.push_back(f);
    }
  }
  return files;
}

MirrorAnswer PullThroughCache::RenderPage(const PageRequest& request,
                                          const std::vector<upstream::IndexFile>& files) {
  // The metadata file served for each listed file: upstream's, else the stored wheel's.
  std::map<std::string, std::string> ours;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto stored = stored_.find(request.index); stored != stored_.end()) {
      for (const upstream::IndexFile& f : files) {
        auto s = stored->second.find(f.sha256);
        if (s != stored->second.end() && s->second.names.count(f.filename) > 0) {
          ours[f.sha256] = s->second.metadata_sha256;
        }
      }
    }
  }
  MetadataDigest digest = [&ours](const upstream::IndexFile& f) {
    if (!f.core_metadata_sha256.empty()) return f.core_metadata_sha256;
    auto it = ours.find(f.sha256);
    return it == ours.end() ? std::string() : it->second;
  };
  MirrorAnswer answer;
  answer.content_type =
      request.json ? "application/vnd.pypi.simple.v1+json" : "application/vnd.pypi.simple.v1+html";
  answer.body = RenderProjectPage(wheel::NormalizeProjectName(request.project), files, request.json,
                                  request.files_base, digest);
  return answer;
}

void PullThroughCache::IndexPageAsync(const PageRequest& request, AnswerCallback done) {
  auto index = options_.indexes.find(request.index);
  if (index == options_.indexes.end()) return done(Status::NotFound("no index " + request.index));
  const std::string project = wheel::NormalizeProjectName(request.project);
  if (!request.revalidate) {
    std::vector<upstream::IndexFile> files;
    bool fresh = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto page = pages_.find(request.index + "/" + project);
      fresh = page != pages_.end() &&
              clock_->SteadyMs() - page->second.fetched_ms < options_.page_ttl_ms;
      if (fresh) files = page->second.files;
    }
    // A kept page with the preloads merged, with no upstream request.
    if (fresh) {
      auto merged = WithPreloads(request.index, project, std::move(files));
      if (merged.ok()) return done(RenderPage(request, *merged));
    }
  }
  Schedule(
      index->second + project + "/",
      [this, request, project, done] {
        auto files = ProjectFiles(request.index, project, request.revalidate);
        if (!files.ok()) return done(files.status());
        done(RenderPage(request, *files));
      },
      [done](const Status& s) { done(s); });
}

void PullThroughCache::TreeFileAsync(const std::string& tree, const std::string& relative,
                                     bool may_pull, AnswerCallback done) {
  auto upstream_url = options_.trees.find(tree);
  if (upstream_url == options_.trees.end()) return done(Status::NotFound("no tree " + tree));
  std::string rule;
  std::string plain = relative.empty() || relative.back() != '/'
                          ? relative
                          : relative.substr(0, relative.size() - 1);
  if (!plain.empty() && !archives::CheckEntryName(plain, &rule).empty()) {
    return done(Status::InvalidArgument("bad path " + relative.substr(0, 200)));
  }
  std::string sha;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = tree_paths_.find(tree + "/" + relative); it != tree_paths_.end()) {
      sha = it->second;
    }
  }
  if (!sha.empty()) return ServeFile(tree, sha, relative, may_pull, std::move(done));
  if (!IsSmallTreeFile(relative)) {
    return done(Status::NotFound(relative.substr(0, 200) +
                                 " is not listed by a manifest or SHA256SUMS the farm has served"));
  }
  Result<MirrorAnswer> kept = SmallTreeFile(tree, relative, /*fetch=*/false);
  if (kept.ok() || kept.status().code() != StatusCode::kAborted) return done(std::move(kept));
  Schedule(
      upstream_url->second,
      [this, tree, relative, done] { done(SmallTreeFile(tree, relative, /*fetch=*/true)); },
      [done](const Status& s) { done(s); });
}

Result<MirrorAnswer> PullThroughCache::SmallTreeFile(const std::string& tree,
                                                     const std::string& relative, bool fetch) {
  std::string base = options_.trees.at(tree);
  if (base.empty() || base.back() != '/') base += '/';
  const std::string key = tree + "/" + relative;
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
  if (!fetch) return Status::Aborted("not kept");
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
    while (small_.size() > options_.max_pages) small_.erase(small_.begin());
  }
  return MirrorAnswer{content_type, listing ? ListingWithPreloads(tree, page->body) : page->body,
                      "", -1};
}

void PullThroughCache::LearnFromTreeFile(const std::string& tree, const std::string& base,
                                         const std::string& relative, const std::string& body) {
  std::string dir =
      relative.substr(0, relative.rfind('/') == std::string::npos ? 0 : relative.rfind('/') + 1);
  const std::string page = tree + "/" + relative;
  auto learn = [&](const std::string& rel, const std::string& sha, int64_t size) {
    std::string rule;
    if (!upstream::IsSha256Hex(sha) || !archives::CheckEntryName(rel, &rule).empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    LearnLocked(tree, sha, {base + httpc::EncodePath(rel), {rel}, size, "", page});
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

Result<MirrorAnswer> PullThroughCache::IndexPage(const PageRequest& request) {
  return Await([&](AnswerCallback done) { IndexPageAsync(request, std::move(done)); });
}

Result<MirrorAnswer> PullThroughCache::File(const FileRequest& request) {
  return Await([&](AnswerCallback done) { FileAsync(request, std::move(done)); });
}

Result<MirrorAnswer> PullThroughCache::TreeFile(const std::string& tree,
                                                const std::string& relative, bool may_pull) {
  return Await(
      [&](AnswerCallback done) { TreeFileAsync(tree, relative, may_pull, std::move(done)); });
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
  Stored& stored = stored_[source][sha256];
  stored.names.insert(index ? filename : path);
  stored.size = size;
  stored.preloaded = true;
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
  return Status::NotFound("farmd serves no index " +
                          log::RedactUrlCredentials(name_or_url.substr(0, 200)));
}

bool PullThroughCache::ServesIndex(const std::string& index) const {
  return options_.indexes.count(index) > 0;
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
