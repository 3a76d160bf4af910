// Upstream watches (docs/schedules.md "Watches"): what a schedule's watch reads upstream
// and which of it is new.
//
//   torch    the torch project page of each watched per-CUDA index (farmd's
//            --upstream-index names), releases matching the spec; with release_candidates
//            also each variant's pre-release index ("test-cu130", its items keyed
//            "torch test-cu130 2.12.0")
//   git      `git ls-remote` of the recipe's git source: tags matching a glob, or one
//            branch's head
//   toolkit  NVIDIA's redist directory (an --upstream-tree): redistrib_X.Y.Z.json files
//
// Pages are fetched with If-None-Match (an index that answers 304 costs a header), and
// every answer is hostile input: bounded pages, parsed by the index parser, versions that
// do not parse skipped. UpstreamWatchPoller is thread-compatible (the runner polls one
// schedule at a time); its fetcher and resolver must outlive it.
#ifndef FARM_DAEMON_CRON_UPSTREAM_WATCH_H_
#define FARM_DAEMON_CRON_UPSTREAM_WATCH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "common/upstream/release_version.h"
#include "daemon/cron/source_resolver.h"
#include "daemon/cron/watch_state.h"
#include "farm/v1/client.pb.h"

namespace farm::cron {

// One thing a watch sees upstream.
struct WatchItem {
  std::string key;          // stable across polls: "torch cu130 2.10.0", "tag v1.2 <sha>"
  std::string label;        // for people: "torch 2.10.0 (cu130)", "tag v1.2"
  int64_t upstream_ms = 0;  // when upstream published it (index upload time); 0 unknown
  std::string version;      // torch and toolkit items: the release
  std::string ref;          // git items: the tag or branch
  std::string commit;       // git items: the commit it names
};

struct PollResult {
  std::vector<WatchItem> items;              // every item of the pages fetched
  std::map<std::string, std::string> etags;  // the validators of those pages
  std::vector<std::string> unchanged_pages;  // answered 304: their items are as seen
};

// What a watch reads besides its own settings: from the schedule's build request.
struct WatchTarget {
  std::vector<std::string> cuda;  // the recipe matrix's CUDA versions ("12.8")
  std::string git_url;            // the git source, "" when the source is not git
  bool follows_torch = false;     // its torch axis follows the index (torch_follow.h)
  bool stable_abi = false;        // the recipe has torch_abi.stable
};

struct WatchUpstreams {
  std::map<std::string, std::string> indexes;  // farmd --upstream-index: name -> URL
  std::map<std::string, std::string> trees;    // farmd --upstream-tree: name -> URL
};

class UpstreamPoller {
 public:
  virtual ~UpstreamPoller() = default;
  // Reads what `watch` watches now; `state` gives the ETags to send.
  virtual Result<PollResult> Poll(const farm::v1::UpstreamWatch& watch, const WatchTarget& target,
                                  const WatchState& state) = 0;
};

class UpstreamWatchPoller final : public UpstreamPoller {
 public:
  UpstreamWatchPoller(upstream::Fetcher* fetcher, SourceResolver* resolver,
                      WatchUpstreams upstreams)
      : fetcher_(fetcher), resolver_(resolver), upstreams_(std::move(upstreams)) {}
  Result<PollResult> Poll(const farm::v1::UpstreamWatch& watch, const WatchTarget& target,
                          const WatchState& state) override;

 private:
  Status PollTorch(const farm::v1::TorchWatch& w, const WatchTarget& target,
                   const WatchState& state, PollResult* out);
  // The items of the torch page of index `name` (a pre-release index when `candidate`).
  Status PollTorchIndex(const std::string& name, const upstream::VersionSpec& spec,
                        bool prereleases, bool candidate, const WatchState& state, PollResult* out);
  Status PollGit(const farm::v1::GitWatch& w, const WatchTarget& target, PollResult* out);
  Status PollToolkit(const farm::v1::ToolkitWatch& w, const WatchState& state, PollResult* out);

  upstream::Fetcher* fetcher_;
  SourceResolver* resolver_;
  WatchUpstreams upstreams_;
};

// The target of a schedule's build request: the matrix's CUDA values (the request's own
// axis when it gives one, else the recipe's) and its git source URL.
Result<WatchTarget> WatchTargetOf(const farm::v1::SubmitBuildRequest& req);

// The index names a torch watch reads: its own, or "cu" + the CUDA of each matrix value.
std::vector<std::string> TorchWatchVariants(const farm::v1::TorchWatch& w,
                                            const WatchTarget& target);

// For people: "torch >=2.9 on cu130, every 600 s", "tags v*", "CUDA >=12.8 (tree cuda)".
std::string DescribeWatch(const farm::v1::UpstreamWatch& watch);

// Checks a watch when its schedule is created: one kind, a spec that parses, an index or
// tree farmd knows, a git source for a git watch, a poll interval of at least
// `min_poll_seconds`; a torch watch that follows release candidates needs each variant's
// pre-release index, a recipe whose torch axis follows the index and per-torch wheels,
// and no watch names a pre-release index as a release one. InvalidArgument says which.
Status CheckWatch(const farm::v1::UpstreamWatch& watch, const WatchTarget& target,
                  const WatchUpstreams& upstreams, int min_poll_seconds);

// The items of `poll` that `state` has not seen, in the order the poll listed them.
std::vector<WatchItem> NewItems(const PollResult& poll, const WatchState& state);

// `state` after `poll`: its items seen, its ETags kept, failures cleared, primed.
WatchState AfterPoll(const WatchState& state, const PollResult& poll);

// "2026-11-27T08:15:02.123456Z" (the index's upload-time) as Unix ms; 0 when malformed.
int64_t ParseUploadTimeMs(const std::string& text);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_UPSTREAM_WATCH_H_
