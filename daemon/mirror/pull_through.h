// PullThroughCache: farmd as the fleet's mirror of the upstreams its workers provision
// from, so N workers asking for one torch wheel make one upstream download, and an
// offline farm serves what was preloaded.
//
//   indexes  PEP 503/691 indexes by name ("cu128" -> PyTorch's .../whl/cu128/). A project
//            page is fetched upstream (JSON first), kept for page_ttl_ms, and answered in
//            the format the client asked for with every file's URL rewritten to the farm
//            (files_base + <sha256>/<filename>); hashes, sizes, requires-python,
//            core-metadata and yanked stay as upstream listed them. The farm remembers
//            each listed file's upstream URL by its sha256.
//   trees    archive folders by name ("redist" -> NVIDIA's redist folder, "python" -> a
//            python-build-standalone release). Listings, redistrib_*.json manifests and
//            SHA256SUMS pass through (kept for page_ttl_ms) and teach the farm the sha256
//            of each archive; an archive is then served from the blob store.
//   files    EnsureFile(sha256) puts a listed file into the blob store, downloading it
//            once however many callers ask at the same time (one flight per digest),
//            refusing it (DataLoss, nothing stored) when its bytes do not match.
//   preload  files an admin added (`farmctl cache add`, AddPreloaded) are listed on their
//            project's page, merged with upstream's listing (upstream's entry wins when
//            both name one file), and preloaded redist manifests are linked from their
//            tree's folder listing, so a worker finds them as it finds upstream's.
//   offline  when an upstream is unreachable, an index page is made from the last page
//            seen, else from the files of that project already in the blob store, with
//            the preloaded ones; a tree's listing from the preloaded manifests.
// The HTTP routes that call this are added to farmd's router separately.
//
// Thread-safe: every method may be called from several request threads.
#ifndef FARM_DAEMON_MIRROR_PULL_THROUGH_H_
#define FARM_DAEMON_MIRROR_PULL_THROUGH_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "common/upstream/simple_index.h"
#include "daemon/mirror/preload.h"
#include "daemon/store/blob/blob_store.h"

namespace farm::mirror {

struct MirrorOptions {
  std::map<std::string, std::string> indexes;  // name -> upstream index URL
  std::map<std::string, std::string> trees;    // name -> upstream folder URL
  int64_t page_ttl_ms = 10 * 60 * 1000;
  std::string staging_dir;  // downloads in progress (same file system as the blob store)
};

struct MirrorAnswer {
  std::string content_type;
  std::string body;         // a page or a small file; empty when blob_sha256 is set
  std::string blob_sha256;  // the answer is this stored blob
  int64_t size = -1;
};

// One file the mirror knows: where upstream has it and under which name.
struct KnownFile {
  std::string url;  // "" for a preloaded file
  std::string filename;
  int64_t size = -1;
  std::string source;  // the index or tree that listed it
};

class PullThroughCache {
 public:
  // `fetcher`, `blobs` and `clock` must outlive the cache.
  PullThroughCache(MirrorOptions options, upstream::Fetcher* fetcher, store::BlobStore* blobs,
                   const Clock* clock);

  // The project page of index `index`; `json` picks PEP 691 over PEP 503 HTML.
  // NotFound for an unknown index or project.
  // `revalidate`: the client asked for a fresh page (Cache-Control: max-age=0), so a kept
  // page is checked upstream with its ETag first (a 304 keeps it).
  Result<MirrorAnswer> IndexPage(const std::string& index, const std::string& project, bool json,
                                 const std::string& files_base, bool revalidate = false);

  // Puts the file with digest `sha256` (listed by a page or manifest served before, or
  // preloaded) into the blob store. NotFound when the digest was never listed.
  Status EnsureFile(const std::string& sha256);

  // The file at `relative` in tree `tree` ("" for the folder listing).
  Result<MirrorAnswer> TreeFile(const std::string& tree, const std::string& relative);

  // Records that the stored blob `sha256` is `path` of index or tree `source`: a wheel or
  // sdist of an index (kIndexFile), a manifest or archive at `path` under a tree. The
  // caller checked the name and the bytes (preload.h). NotFound for a source farmd does not
  // serve (an index for kIndexFile, a tree otherwise); FailedPrecondition when the blob is
  // not stored.
  Status AddPreloaded(const std::string& source, PreloadKind kind, const std::string& path,
                      const std::string& sha256, int64_t size);

  // The name of the index `name_or_url` names: a configured name, or the upstream URL of
  // one (a trailing '/' does not matter); "" names the only index when there is one.
  Result<std::string> ResolveIndex(const std::string& name_or_url) const;
  bool ServesTree(const std::string& tree) const;
  // The blob preloaded or learned at `path` of `tree`; NotFound when there is none.
  Result<std::string> TreePathSha(const std::string& tree, const std::string& path) const;

  // Upstream downloads made so far (for metrics and tests).
  int64_t upstream_downloads() const;

 private:
  struct Page {
    std::vector<upstream::IndexFile> files;
    int64_t fetched_ms = 0;
    std::string etag;  // the upstream page's validator, "" when it gave none
  };
  struct Flight {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    Status status;
  };

  // Upstream's files merged with the preloaded ones.
  Result<std::vector<upstream::IndexFile>> ProjectFiles(const std::string& index,
                                                        const std::string& project,
                                                        bool revalidate);
  Result<std::vector<upstream::IndexFile>> UpstreamProjectFiles(const std::string& index,
                                                                const std::string& project,
                                                                bool revalidate);
  // A tree's folder listing with links to the preloaded manifests it lacks; `upstream`
  // is upstream's listing, "" when there is none.
  std::string ListingWithPreloads(const std::string& tree, const std::string& upstream) const;
  Status Download(const std::string& sha256, const KnownFile& file);
  void Learn(const std::string& sha256, const KnownFile& file);
  void LearnFromTreeFile(const std::string& tree, const std::string& base,
                         const std::string& relative, const std::string& body);

  MirrorOptions options_;
  upstream::Fetcher* fetcher_;
  store::BlobStore* blobs_;
  const Clock* clock_;

  mutable std::mutex mu_;
  std::map<std::string, Page> pages_;                             // "index/project"
  std::map<std::string, std::pair<std::string, int64_t>> small_;  // tree files: body, time
  std::map<std::string, KnownFile> known_;                        // sha256 -> file
  std::map<std::string, std::string> tree_paths_;                 // "tree/relative" -> sha256
  std::map<std::string, std::shared_ptr<Flight>> flights_;
  std::map<std::string, std::vector<upstream::IndexFile>> preloaded_;  // "index/project"
  std::map<std::string, std::set<std::string>> preloaded_manifests_;   // tree -> paths
  int64_t downloads_ = 0;
};

// Renders `files` as a PEP 691 JSON (`json`) or PEP 503 HTML project page whose file URLs
// are files_base + sha256 + "/" + filename (the filename percent-encoded).
std::string RenderProjectPage(const std::string& project,
                              const std::vector<upstream::IndexFile>& files, bool json,
                              const std::string& files_base);

}  // namespace farm::mirror

#endif  // FARM_DAEMON_MIRROR_PULL_THROUGH_H_
