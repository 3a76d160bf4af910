// A matrix that follows upstream (docs/recipes.md "A torch axis that follows the index"):
// `matrix.torch: ">=2.8"` or `{spec, newest, prereleases}` becomes, at submit or when a
// watch fires, the torch minors the per-CUDA indexes have now, each pinned to one release
// (environment.torch), with the (torch, CUDA) pairs an index lacks excluded. The resolved
// recipe is what the build stores, so the build records what it followed to; cells whose
// inputs did not change keep their build keys and are answered from the store.
#ifndef FARM_DAEMON_CRON_TORCH_FOLLOW_H_
#define FARM_DAEMON_CRON_TORCH_FOLLOW_H_

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "common/upstream/release_version.h"
#include "farm/v1/types.pb.h"

namespace farm::cron {

// The torch releases listed on the index at `index_url` (every wheel's version, local
// labels dropped, deduplicated). NotFound when the index has no torch.
Result<std::vector<upstream::ReleaseVersion>> ListTorchReleases(upstream::Fetcher& fetcher,
                                                                const std::string& index_url);

// The releases each index lists, by the variant it serves ("cu128").
using Releases = std::map<std::string, std::vector<upstream::ReleaseVersion>>;

// Resolves recipe->matrix().torch_follow() over `cuda` (the cells' CUDA values) with the
// releases each index lists: fills matrix.torch, the environment's torch pins (a pin the
// recipe wrote itself wins) and the excludes. `candidates` are the releases of the
// variants' pre-release indexes ("test-cu130", docs/schedules.md "Release candidates"): a
// minor that no release index lists is taken from there, pre-releases included, after the
// `newest` finals, and named in environment.torch_from_test; a minor a release index lists
// is never a candidate. FailedPrecondition when no release matches.
Status ApplyTorchFollow(const std::vector<std::string>& cuda, const Releases& releases,
                        const Releases& candidates, farm::v1::Recipe* recipe);
inline Status ApplyTorchFollow(const std::vector<std::string>& cuda, const Releases& releases,
                               farm::v1::Recipe* recipe) {
  return ApplyTorchFollow(cuda, releases, {}, recipe);
}

// What farmd says when it starts about its upstream index `name` at `url` (farmd
// --upstream-index), so that a wrong URL shows then and not at the first build.
struct IndexCheck {
  bool ok = false;   // it answers and lists torch
  std::string line;  // "upstream index cu128 (URL): answers, torch 2.8.0, 2.9.0", or why not
};
IndexCheck CheckUpstreamIndex(upstream::Fetcher& fetcher, const std::string& name,
                              const std::string& url);

// "cu128" for CUDA "12.8".
std::string CudaVariantName(const std::string& cuda);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_TORCH_FOLLOW_H_
