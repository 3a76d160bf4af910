#include "daemon/cron/upstream_watch.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <regex>

#include "common/recipe/cell_environment.h"
#include "common/recipe/recipe.h"
#include "common/upstream/release_version.h"
#include "common/upstream/simple_index.h"

namespace farm::cron {
namespace {

constexpr int64_t kMaxTreePageBytes = int64_t{8} << 20;
constexpr size_t kMaxItems = 5000;
constexpr char kDefaultTree[] = "cuda";
constexpr int kDefaultPollSeconds = 600;

std::string CudaVariant(const std::string& cuda) {
  std::string out = "cu";
  for (char c : cuda) {
    if (c != '.') out += c;
  }
  return out;
}

// The release of a wheel file name ("torch-2.9.0+cu130-cp311-...whl" -> 2.9.0+cu130).
std::optional<upstream::ReleaseVersion> WheelVersion(const std::string& filename) {
  if (filename.size() < 4 || filename.compare(filename.size() - 4, 4, ".whl") != 0) {
    return std::nullopt;
  }
  size_t first = filename.find('-');
  size_t second = first == std::string::npos ? first : filename.find('-', first + 1);
  if (second == std::string::npos) return std::nullopt;
  return upstream::ParseReleaseVersion(filename.substr(first + 1, second - first - 1));
}

Result<upstream::VersionSpec> Spec(const std::string& text, const std::string& what) {
  auto spec = upstream::VersionSpec::Parse(text);
  if (!spec.ok()) return spec.status().WithContext(what);
  return spec;
}

bool Wanted(const upstream::ReleaseVersion& v, const upstream::VersionSpec& spec,
            bool prereleases) {
  return (prereleases || !v.IsPrerelease()) && spec.Matches(v);
}

void AddItem(PollResult* out, WatchItem item) {
  if (out->items.size() >= kMaxItems) return;
  for (WatchItem& have : out->items) {
    if (have.key != item.key) continue;
    // Several files (one per Python) make one release: it was published with the first.
    if (item.upstream_ms > 0 && (have.upstream_ms == 0 || item.upstream_ms < have.upstream_ms)) {
      have.upstream_ms = item.upstream_ms;
    }
    return;
  }
  out->items.push_back(std::move(item));
}

}  // namespace

Result<WatchTarget> WatchTargetOf(const farm::v1::SubmitBuildRequest& req) {
  std::string path = req.recipe_path().empty() ? "recipe.yaml" : req.recipe_path();
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, recipe::ParseRecipe(req.recipe_yaml(), path));
  WatchTarget target;
  const auto& cuda = req.matrix().cuda().empty() ? recipe.matrix().cuda() : req.matrix().cuda();
  target.cuda.assign(cuda.begin(), cuda.end());
  const farm::v1::Source& source =
      req.source().kind_case() != farm::v1::Source::KIND_NOT_SET ? req.source() : recipe.source();
  if (source.has_git()) target.git_url = source.git().url();
  target.follows_torch = recipe.matrix().has_torch_follow() && req.matrix().torch().empty();
  target.stable_abi = !recipe.torch_abi().stable_floor().empty();
  return target;
}

std::vector<std::string> TorchWatchVariants(const farm::v1::TorchWatch& w,
                                            const WatchTarget& target) {
  std::vector<std::string> out(w.variants().begin(), w.variants().end());
  if (out.empty()) {
    for (const std::string& cuda : target.cuda) out.push_back(CudaVariant(cuda));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t ParseUploadTimeMs(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) !=
          6 ||
      y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) {
    return 0;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  // A fraction of a second: its first three digits.
  if (static_cast<size_t>(used) < text.size() && text[used] == '.') {
    int64_t scale = 100;
    for (size_t i = used + 1; i < text.size() && scale > 0 && std::isdigit(text[i]); ++i) {
      ms += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  return ms;
}

Result<PollResult> UpstreamWatchPoller::Poll(const farm::v1::UpstreamWatch& watch,
                                             const WatchTarget& target, const WatchState& state) {
  PollResult out;
  switch (watch.kind_case()) {
    case farm::v1::UpstreamWatch::kTorch:
      FARM_RETURN_IF_ERROR(PollTorch(watch.torch(), target, state, &out));
      break;
    case farm::v1::UpstreamWatch::kGit:
      FARM_RETURN_IF_ERROR(PollGit(watch.git(), target, &out));
      break;
    case farm::v1::UpstreamWatch::kToolkit:
      FARM_RETURN_IF_ERROR(PollToolkit(watch.toolkit(), state, &out));
      break;
    default:
      return Status::InvalidArgument("the watch names no upstream");
  }
  return out;
}

Status UpstreamWatchPoller::PollTorch(const farm::v1::TorchWatch& w, const WatchTarget& target,
                                      const WatchState& state, PollResult* out) {
  FARM_ASSIGN_OR_RETURN(upstream::VersionSpec spec, Spec(w.spec(), "torch watch spec"));
  for (const std::string& variant : TorchWatchVariants(w, target)) {
    FARM_RETURN_IF_ERROR(PollTorchIndex(variant, spec, w.prereleases(), false, state, out));
    if (w.release_candidates()) {
      // Pre-releases too: a candidate is what was asked for.
      FARM_RETURN_IF_ERROR(
          PollTorchIndex(recipe::PrereleaseIndex(variant), spec, true, true, state, out));
    }
  }
  return Status::Ok();
}

Status UpstreamWatchPoller::PollTorchIndex(const std::string& name,
                                           const upstream::VersionSpec& spec, bool prereleases,
                                           bool candidate, const WatchState& state,
                                           PollResult* out) {
  auto index = upstreams_.indexes.find(name);
  if (index == upstreams_.indexes.end()) {
    return Status::FailedPrecondition("farmd has no --upstream-index " + name);
  }
  std::string url = upstream::ProjectPageUrl(index->second, "torch");
  auto etag = state.etags.find(url);
  auto page = fetcher_->GetPageIfChanged(url, upstream::kAcceptIndex, upstream::kMaxIndexPageBytes,
                                         etag == state.etags.end() ? "" : etag->second);
  // An index without torch yet lists nothing new.
  if (!page.ok() && page.status().code() == StatusCode::kNotFound) return Status::Ok();
  if (!page.ok()) return page.status().WithContext("torch on " + name);
  if (page->not_modified) {
    out->unchanged_pages.push_back(url);
    return Status::Ok();
  }
  FARM_ASSIGN_OR_RETURN(auto files, upstream::ParseProjectPage(*page));
  if (!page->etag.empty()) out->etags[url] = page->etag;
  for (const upstream::IndexFile& f : files) {
    auto v = WheelVersion(f.filename);
    if (!v || !Wanted(*v, spec, prereleases)) continue;
    AddItem(out, {.key = "torch " + name + " " + v->Public(),
                  .label = "torch " + v->Public() + (candidate ? " release candidate" : "") + " (" +
                           name + ")",
                  .upstream_ms = ParseUploadTimeMs(f.upload_time),
                  .version = v->Public()});
  }
  return Status::Ok();
}

Status UpstreamWatchPoller::PollGit(const farm::v1::GitWatch& w, const WatchTarget& target,
                                    PollResult* out) {
  if (target.git_url.empty()) return Status::FailedPrecondition("the source is not git");
  FARM_ASSIGN_OR_RETURN(auto refs, resolver_->ListRefs(target.git_url));
  for (const auto& [name, commit] : refs) {
    if (!w.tags().empty() && name.rfind("refs/tags/", 0) == 0) {
      std::string tag = name.substr(10);
      if (fnmatch(w.tags().c_str(), tag.c_str(), 0) != 0) continue;
      AddItem(out, {.key = "tag " + tag, .label = "tag " + tag, .ref = tag, .commit = commit});
    } else if (!w.branch().empty() && name == "refs/heads/" + w.branch()) {
      AddItem(out, {.key = "branch " + w.branch() + " " + commit,
                    .label = "branch " + w.branch() + " at " + commit.substr(0, 12),
                    .ref = w.branch(),
                    .commit = commit});
    }
  }
  return Status::Ok();
}

Status UpstreamWatchPoller::PollToolkit(const farm::v1::ToolkitWatch& w, const WatchState& state,
                                        PollResult* out) {
  FARM_ASSIGN_OR_RETURN(upstream::VersionSpec spec, Spec(w.spec(), "toolkit watch spec"));
  std::string name = w.tree().empty() ? kDefaultTree : w.tree();
  auto tree = upstreams_.trees.find(name);
  if (tree == upstreams_.trees.end()) {
    return Status::FailedPrecondition("farmd has no --upstream-tree " + name);
  }
  std::string url = tree->second;
  auto etag = state.etags.find(url);
  FARM_ASSIGN_OR_RETURN(upstream::FetchedPage page,
                        fetcher_->GetPageIfChanged(url, "text/html", kMaxTreePageBytes,
                                                   etag == state.etags.end() ? "" : etag->second));
  if (page.not_modified) {
    out->unchanged_pages.push_back(url);
    return Status::Ok();
  }
  if (!page.etag.empty()) out->etags[url] = page.etag;
  static const std::regex kManifest(R"(redistrib_([0-9]+\.[0-9]+(\.[0-9]+)?)\.json)");
  auto begin = std::sregex_iterator(page.body.begin(), page.body.end(), kManifest);
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    auto v = upstream::ParseReleaseVersion((*it)[1].str());
    if (!v || !spec.Matches(*v)) continue;
    AddItem(out, {.key = "cuda " + v->Public(),
                  .label = "CUDA " + v->Public() + " redist",
                  .version = v->Public()});
  }
  return Status::Ok();
}

std::string DescribeWatch(const farm::v1::UpstreamWatch& w) {
  std::string out;
  if (w.has_torch()) {
    out = "torch " + (w.torch().spec().empty() ? std::string("any") : w.torch().spec());
    for (int i = 0; i < w.torch().variants_size(); ++i) {
      out += (i ? ", " : " on ") + w.torch().variants(i);
    }
    if (w.torch().prereleases()) out += " (pre-releases too)";
    if (w.torch().release_candidates()) out += " (release candidates too)";
  } else if (w.has_git()) {
    out = w.git().tags().empty() ? "branch " + w.git().branch() : "tags " + w.git().tags();
  } else if (w.has_toolkit()) {
    out = "CUDA " + (w.toolkit().spec().empty() ? std::string("any") : w.toolkit().spec()) +
          " (tree " + (w.toolkit().tree().empty() ? kDefaultTree : w.toolkit().tree()) + ")";
  }
  return out + ", every " +
         std::to_string(w.poll_seconds() > 0 ? w.poll_seconds() : kDefaultPollSeconds) + " s";
}

namespace {

// CheckWatch of a torch watch.
Status CheckTorchWatch(const farm::v1::TorchWatch& w, const WatchTarget& target,
                       const WatchUpstreams& upstreams) {
  FARM_RETURN_IF_ERROR(Spec(w.spec(), "torch watch spec").status());
  auto variants = TorchWatchVariants(w, target);
  if (variants.empty()) {
    return Status::InvalidArgument(
        "a torch watch needs the indexes to read: name them, or give the recipe a CUDA axis");
  }
  for (const std::string& v : variants) {
    if (recipe::IsPrereleaseIndex(v)) {
      return Status::InvalidArgument(
          "index " + v + " is a pre-release index: a watch reads it beside the release index " +
          v.substr(recipe::kPrereleaseIndexPrefix.size()) +
          " when it follows release candidates (--watch-candidates), never as a release index");
    }
    if (!upstreams.indexes.count(v)) {
      return Status::InvalidArgument("the torch watch reads index " + v +
                                     ", which this farmd does not know (--upstream-index " + v +
                                     "=URL)");
    }
  }
  if (!w.release_candidates()) return Status::Ok();
  if (!target.follows_torch) {
    return Status::InvalidArgument(
        "a watch that follows release candidates needs a torch axis that follows the index "
        "(matrix.torch: \">=2.9\"): a fixed torch list never builds a candidate");
  }
  if (target.stable_abi) {
    return Status::InvalidArgument(
        "release candidates are built for per-torch wheels; this recipe's stable-ABI wheels "
        "(torch_abi.stable) are proven on each final release without a rebuild instead");
  }
  for (const std::string& v : variants) {
    std::string test = recipe::PrereleaseIndex(v);
    if (!upstreams.indexes.count(test)) {
      return Status::InvalidArgument(
          "the torch watch follows release candidates of " + v + " on index " + test +
          ", which this farmd does not know (--upstream-index " + test +
          "=URL, PyTorch's https://download.pytorch.org/whl/test/" + v + "/)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckWatch(const farm::v1::UpstreamWatch& watch, const WatchTarget& target,
                  const WatchUpstreams& upstreams, int min_poll_seconds) {
  if (watch.poll_seconds() != 0 && watch.poll_seconds() < min_poll_seconds) {
    return Status::InvalidArgument("a watch polls at most every " +
                                   std::to_string(min_poll_seconds) + " s (poll_seconds " +
                                   std::to_string(watch.poll_seconds()) + ")");
  }
  switch (watch.kind_case()) {
    case farm::v1::UpstreamWatch::kTorch:
      return CheckTorchWatch(watch.torch(), target, upstreams);
    case farm::v1::UpstreamWatch::kGit:
      if (watch.git().tags().empty() == watch.git().branch().empty()) {
        return Status::InvalidArgument("a git watch follows either tags (a glob) or a branch");
      }
      if (target.git_url.empty()) {
        return Status::InvalidArgument("a git watch needs a recipe whose source is git");
      }
      return Status::Ok();
    case farm::v1::UpstreamWatch::kToolkit: {
      FARM_RETURN_IF_ERROR(Spec(watch.toolkit().spec(), "toolkit watch spec").status());
      std::string tree = watch.toolkit().tree().empty() ? kDefaultTree : watch.toolkit().tree();
      if (!upstreams.trees.count(tree)) {
        return Status::InvalidArgument("the toolkit watch reads tree " + tree +
                                       ", which this farmd does not know (--upstream-tree " + tree +
                                       "=URL)");
      }
      return Status::Ok();
    }
    default:
      return Status::InvalidArgument("the watch names no upstream (torch, git or toolkit)");
  }
}

std::vector<WatchItem> NewItems(const PollResult& poll, const WatchState& state) {
  std::vector<WatchItem> out;
  for (const WatchItem& item : poll.items) {
    if (!state.seen.count(item.key)) out.push_back(item);
  }
  return out;
}

WatchState AfterPoll(const WatchState& state, const PollResult& poll) {
  WatchState next = state;
  next.primed = true;
  next.failures = 0;
  for (const auto& [url, etag] : poll.etags) next.etags[url] = etag;
  for (const WatchItem& item : poll.items) next.seen.insert(item.key);
  if (next.seen.size() > kMaxSeenKeys) {
    next.seen.clear();
    for (const WatchItem& item : poll.items) next.seen.insert(item.key);
  }
  return next;
}

}  // namespace farm::cron
