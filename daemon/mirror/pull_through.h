// PullThroughCache: farmd as the fleet's mirror of the upstreams its workers provision
// from, so N workers asking for one torch wheel make one upstream download, and an
// offline farm serves what was preloaded. It serves upstreams and nothing else:
//
//   indexes  PEP 503/691 indexes by name ("cu128" -> PyTorch's .../whl/cu128/). A project
//            page is fetched upstream (JSON first), kept for page_ttl_ms, and answered in
//            the format the client asked for with every file's URL rewritten to the farm
//            (files_base + <sha256>/<filename>, files_base naming the index); hashes,
//            sizes, requires-python and yanked stay as upstream listed them. Each index
//            keeps what it listed (URL, names) apart from every other index's.
//   metadata a wheel's PEP 658 metadata file: upstream's when its page offers one
//            (checked against the digest it gives), else the .dist-info/METADATA of the
//            stored wheel; either is listed under both PEP 714's and PEP 658's names.
//   trees    archive folders by name ("redist", "python"). Listings, redistrib_*.json
//            manifests and SHA256SUMS pass through (kept for page_ttl_ms) and teach the
//            tree the sha256 of each archive, which is then served from the blob store.
//   files    a file is served only for the index (or tree) that listed it, under the name
//            it listed it as: from the blob store when stored, else downloaded once
//            however many callers ask at the same time (one flight per index and digest),
//            refused (DataLoss, nothing stored) when its bytes do not match. Bytes the
//            blob store holds for another reason (a submitter's source archive, a wheel
//            the farm built) are never served on an upstream's word: an index that lists
//            their digest must give the bytes itself. A file that is not stored yet is
//            downloaded only for a caller that `may_pull` (a worker, an admin, farmd's
//            own resolver; anyone with MirrorOptions::anonymous_pulls).
//   hosts    a file URL (and every redirect) must name the host of its index or tree, or
//            one of allowed_hosts; anything else is refused without a request.
//   bound    what the cache downloaded is accounted (store::MirrorStore) and kept under
//            max_bytes, the least recently served evicted first; a blob being served
//            (MirrorAnswer::hold alive) is never evicted, nor a preloaded file.
//   preload  files an admin added (`farmctl cache add`, AddPreloaded) are listed on their
//            project's page, merged with upstream's listing (upstream's entry wins when
//            both name one file), and preloaded redist manifests are linked from their
//            tree's folder listing, so a worker finds them as it finds upstream's.
//   offline  when an upstream is unreachable, an index page is made from the last page
//            seen, else from the files of that project stored for that index, with the
//            preloaded ones; a tree's listing from the preloaded manifests.
//   threads  every upstream request runs on the cache's FetchScheduler (fetch_scheduler.h),
//            never on the caller's thread: the *Async calls answer at once when nothing
//            upstream is needed, else from a scheduler thread.
// Error texts never hold an upstream URL's credentials. The HTTP routes that call this
// are added to farmd's router separately.
//
// Thread-safe: every method may be called from several threads.
#ifndef FARM_DAEMON_MIRROR_PULL_THROUGH_H_
#define FARM_DAEMON_MIRROR_PULL_THROUGH_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
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
#include "daemon/mirror/fetch_scheduler.h"
#include "daemon/mirror/page_render.h"
#include "daemon/mirror/preload.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/mirror_store.h"

namespace farm::mirror {

struct MirrorOptions {
  std::map<std::string, std::string> indexes;  // name -> upstream index URL
  std::map<std::string, std::string> trees;    // name -> upstream folder URL
  int64_t page_ttl_ms = 10 * 60 * 1000;
  std::string staging_dir;  // downloads in progress (same file system as the blob store)
  // Hosts besides an index's or tree's own that its file URLs may name (PyPI's pages list
  // files.pythonhosted.org); the fetcher's RedirectPolicy should allow the same.
  std::set<std::string> allowed_hosts;
  // The bytes of blobs downloaded from upstreams kept at most (preloads not counted);
  // 0: no bound.
  int64_t max_bytes = int64_t{100} << 30;
  // Whether a caller that may not pull (no worker or admin credential) may still make
  // farmd download a file nobody asked for before.
  bool anonymous_pulls = false;
  FetchLimits limits;
  size_t max_pages = 2000;  // project pages and tree files kept in memory
};

struct MirrorAnswer {
  std::string content_type;
  std::string body;         // a page or a small file; empty when blob_sha256 is set
  std::string blob_sha256;  // the answer is this stored blob
  int64_t size = -1;
  // Keeps the blob from eviction while it is alive: hold it until the bytes are sent.
  std::shared_ptr<const void> hold;
};

using AnswerCallback = std::function<void(Result<MirrorAnswer>)>;

struct PageRequest {
  std::string index;
  std::string project;  // as the URL names it; normalized here
  bool json = false;    // PEP 691 JSON, else PEP 503 HTML
  std::string files_base;
  // The client asked for a fresh page (Cache-Control: max-age=0): a kept page is checked
  // upstream with its ETag first (a 304 keeps it).
  bool revalidate = false;
};

struct FileRequest {
  std::string index;
  std::string sha256;
  std::string filename;
  bool metadata = false;  // the file's PEP 658 metadata file instead of the file
  bool may_pull = false;  // the caller may make farmd download a file not stored yet
};

// Figures for /metrics.
struct MirrorStats {
  int64_t downloads = 0;     // files downloaded from upstreams
  int64_t stored_bytes = 0;  // what the downloaded blobs kept take
  int64_t max_bytes = 0;     // the bound (0: none)
  int64_t evicted = 0;       // blobs evicted to stay under the bound
  int64_t files_served = 0;  // file answers (not metadata, not pages)
  int64_t metadata_served = 0;
  int64_t pulls_refused = 0;  // files not downloaded for a caller that may not pull
  int fetches_running = 0;
  int fetches_queued = 0;
};

class PullThroughCache {
 public:
  // `fetcher`, `blobs` and `clock` must outlive the cache; `accounting` (null: nothing is
  // recorded, nothing bounded) too.
  PullThroughCache(MirrorOptions options, upstream::Fetcher* fetcher, store::BlobStore* blobs,
                   store::MirrorStore* accounting, const Clock* clock);
  ~PullThroughCache();  // Stop()

  // Removes what downloads of a farmd that died left in the staging folder, reads back
  // what the accounting says is stored (a restart serves it as before) and evicts down to
  // the bound. Call once, before serving.
  Status Start();
  // Stops the scheduler (waiting callers get Unavailable; downloads in progress finish or
  // are cancelled by the fetcher) and records the last uses. Idempotent.
  void Stop();

  // The answers, to `done` exactly once: at once on this thread when no upstream request
  // is needed (a kept page, a stored file, a refusal), else from a scheduler thread.
  // NotFound for an unknown index, tree, project or file, or a file the index did not
  // list under that name; PermissionDenied for a file that is not stored when the caller
  // may not pull, or whose URL names a host that is not allowed; Unavailable or
  // DeadlineExceeded when upstream fails, DataLoss for bytes that fail their sha256.
  void IndexPageAsync(const PageRequest& request, AnswerCallback done);
  void FileAsync(const FileRequest& request, AnswerCallback done);
  // The file at `relative` in tree `tree` ("" for the folder listing).
  void TreeFileAsync(const std::string& tree, const std::string& relative, bool may_pull,
                     AnswerCallback done);

  // The same, waiting for the answer (tests and tools; never on an HTTP thread).
  Result<MirrorAnswer> IndexPage(const PageRequest& request);
  Result<MirrorAnswer> File(const FileRequest& request);
  Result<MirrorAnswer> TreeFile(const std::string& tree, const std::string& relative,
                                bool may_pull = true);

  // Records that the stored blob `sha256` is `path` of index or tree `source`: a wheel or
  // sdist of an index (kIndexFile), a manifest or archive at `path` under a tree. The
  // caller checked the name and the bytes (preload.h). Never evicted. NotFound for a
  // source farmd does not serve (an index for kIndexFile, a tree otherwise);
  // FailedPrecondition when the blob is not stored.
  Status AddPreloaded(const std::string& source, PreloadKind kind, const std::string& path,
                      const std::string& sha256, int64_t size);

  // The name of the index `name_or_url` names: a configured name, or the upstream URL of
  // one (a trailing '/' does not matter); "" names the only index when there is one.
  Result<std::string> ResolveIndex(const std::string& name_or_url) const;
  bool ServesIndex(const std::string& index) const;
  bool ServesTree(const std::string& tree) const;
  // The blob preloaded or learned at `path` of `tree`; NotFound when there is none.
  Result<std::string> TreePathSha(const std::string& tree, const std::string& path) const;

  // Where index `index` has the file of digest `sha256`, as its page listed it; NotFound
  // when no page kept in memory lists it.
  Result<std::string> ListedUrl(const std::string& index, const std::string& sha256) const;

  int64_t upstream_downloads() const;
  MirrorStats stats() const;

 private:
  struct Page {
    std::vector<upstream::IndexFile> files;
    int64_t fetched_ms = 0;
    std::string etag;  // the upstream page's validator, "" when it gave none
  };
  // What one source listed for one digest.
  struct Listed {
    std::string url;
    std::set<std::string> names;
    int64_t size = -1;
    std::string core_metadata_sha256;  // upstream's metadata file, "" when it offers none
    std::string page;                  // the page or tree file that listed it
  };
  // What one source may serve from the blob store for one digest.
  struct Stored {
    std::set<std::string> names;
    int64_t size = -1;
    std::string metadata_sha256;
    bool preloaded = false;
  };
  struct Flight {
    std::vector<std::function<void(Status)>> waiters;
  };
  struct Pins;  // blobs being served

  // Pages and trees (pull_through.cc).
  Result<std::vector<upstream::IndexFile>> ProjectFiles(const std::string& index,
                                                        const std::string& project,
                                                        bool revalidate);
  Result<std::vector<upstream::IndexFile>> UpstreamProjectFiles(const std::string& index,
                                                                const std::string& project,
                                                                bool revalidate);
  // `upstream` (a page or its failure) merged with the project's preloaded files.
  Result<std::vector<upstream::IndexFile>> WithPreloads(
      const std::string& index, const std::string& project,
      Result<std::vector<upstream::IndexFile>> upstream);
  std::vector<upstream::IndexFile> StoredProjectFilesLocked(const std::string& index,
                                                            const std::string& project);
  MirrorAnswer RenderPage(const PageRequest& request,
                          const std::vector<upstream::IndexFile>& files);
  void KeepPageLocked(const std::string& key, Page page);
  // A listing, manifest or SHA256SUMS: the kept copy while fresh, else (`fetch`) from
  // upstream, else Aborted.
  Result<MirrorAnswer> SmallTreeFile(const std::string& tree, const std::string& relative,
                                     bool fetch);
  std::string ListingWithPreloads(const std::string& tree, const std::string& upstream) const;
  void LearnFromTreeFile(const std::string& tree, const std::string& base,
                         const std::string& relative, const std::string& body);
  void LearnLocked(const std::string& source, const std::string& sha256, const Listed& listed);
  // Runs `run` on the scheduler for the upstream at `url`; `failed` runs instead when it
  // cannot be queued or is dropped.
  void Schedule(const std::string& url, std::function<void()> run,
                std::function<void(const Status&)> failed);

  // Files (pull_through_files.cc).
  // A file its index listed once and no page kept in memory lists any longer (a restart, an
  // evicted page; a lock names it) is looked up again on its project's page, once
  // (`relisted`), before it is refused.
  void ServeFile(const std::string& source, const std::string& sha256, const std::string& name,
                 bool may_pull, AnswerCallback done, bool relisted = false);
  // What ServeFile does once it lets go of the lock: answer now, share another source's
  // bytes, wait for a download in flight, start one, or look the project up again.
  struct FileDecision {
    enum Next { kAnswer, kShare, kWait, kStart, kRelist } next = kAnswer;
    Result<MirrorAnswer> answer = Status::Internal("unanswered");
    Listed listing;
    std::string share_metadata;
  };
  // Decides under mu_; a download to wait for or start already holds `done` as a waiter.
  FileDecision DecideFileLocked(const std::string& source, const std::string& sha256,
                                const std::string& name, bool may_pull, bool relisted,
                                const AnswerCallback& done);
  void DecideShareLocked(const std::string& source, const std::string& sha256,
                         const std::string& name, const Listed& listed, FileDecision* d);
  void Relist(const std::string& source, const std::string& sha256, const std::string& name,
              bool may_pull, AnswerCallback done);
  void Metadata(const FileRequest& request, AnswerCallback done);
  void FetchMetadata(const std::string& url, const std::string& digest, const std::string& filename,
                     AnswerCallback done);
  // The stored blob as an answer, pinned; NotFound when it is not stored for `source`.
  Result<MirrorAnswer> StoredAnswerLocked(const std::string& source, const std::string& sha256,
                                          const std::string& name);
  bool UpstreamBlobLocked(const std::string& sha256) const;
  bool HostAllowed(const std::string& source, const std::string& url) const;
  // What a caller waiting for a download of `sha256` gets once it ends with a Status.
  std::function<void(Status)> AfterDownload(const std::string& source, const std::string& sha256,
                                            const std::string& name, AnswerCallback done);
  void Finish(const std::string& key, const Status& status);
  Status Download(const std::string& source, const std::string& sha256, const std::string& name,
                  const Listed& file);
  Status Place(const std::string& temp, const std::string& sha256, int64_t bytes);
  // Records the stored blob for `source` (memory and accounting), then keeps the bound.
  void RecordStored(const std::string& source, const std::string& sha256, const std::string& name,
                    int64_t size, const std::string& metadata_sha256, const std::string& metadata);
  // Notes that the blob was served now; the accounting learns it in batches (FlushUses),
  // so that serving a file costs the HTTP thread no durable write.
  void Touch(const std::string& sha256);
  void FlushUses();
  void EvictOverBound();
  Status LoadStored();

  MirrorOptions options_;
  upstream::Fetcher* fetcher_;
  store::BlobStore* blobs_;
  store::MirrorStore* accounting_;
  const Clock* clock_;
  std::shared_ptr<Pins> pins_;
  FetchScheduler scheduler_;

  mutable std::mutex mu_;
  std::map<std::string, Page> pages_;                                  // "index/project"
  std::map<std::string, std::pair<std::string, int64_t>> small_;       // tree files: body, time
  std::map<std::string, std::map<std::string, Listed>> listed_;        // source -> sha256 ->
  std::map<std::string, std::map<std::string, Stored>> stored_;        // source -> sha256 ->
  std::map<std::string, std::string> tree_paths_;                      // "tree/relative" -> sha256
  std::map<std::string, std::shared_ptr<Flight>> flights_;             // "source\nsha256"
  std::map<std::string, std::vector<upstream::IndexFile>> preloaded_;  // "index/project"
  std::map<std::string, std::set<std::string>> preloaded_manifests_;   // tree -> paths
  std::map<std::string, std::string> upstream_metadata_;  // sha256 -> a metadata file's text
  size_t upstream_metadata_bytes_ = 0;
  std::map<std::string, int64_t> uses_;  // sha256 -> last served, not yet in the accounting
  int64_t stored_bytes_ = 0;
  MirrorStats counts_;  // downloads, evicted, served, refused
};

// Removes from the staging folder `dir` the downloads whose farmd died mid-way (files no
// live writer holds locked, store/blob/temp_files.h) and logs what it removed; a missing
// folder holds nothing. PullThroughCache::Start calls it; so does a farmd that serves no
// upstreams any more.
void SweepStaging(const std::string& dir, int64_t now_unix_s);

}  // namespace farm::mirror

#endif  // FARM_DAEMON_MIRROR_PULL_THROUGH_H_
