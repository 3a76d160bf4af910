// Helpers of the Publisher (outbox.h) kept apart so they can be tested alone: planning a
// wheel's outbox rows, labelling a stored wheel into the blob store, deciding whether a
// release may be published, and rendering its notes. Internal to farm_outbox; pure or
// side-effect-only-through-arguments functions, safe from any thread.
#ifndef FARM_DAEMON_PUBLISH_OUTBOX_INTERNAL_H_
#define FARM_DAEMON_PUBLISH_OUTBOX_INTERNAL_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/publish/github_releases.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::publish {

// The rows one publishable wheel gets from its recipe's publish section: a GitHub asset
// row plus the build's release row (inserted once), and a Hub file row whose path keeps
// "{wheel}" until the labelled file name is known. `arch` is the wheel's arch label
// ("sm90.sm120a", farm::wheel::ArchLabel) for the Hub path's {arch}; {build} (and
// {build_id}) is the build's id.
std::vector<store::PublicationRow> PlanRows(const farm::v1::Recipe& recipe, int64_t build_id,
                                            int64_t artifact_id, const farm::v1::MatrixCell& cell,
                                            const std::string& arch);

// The draft release a build's wheels go to.
ReleaseSpec ReleaseSpecFor(const farm::v1::Recipe& recipe, const store::PublicationRow& row);

// FailedPrecondition saying which token farmd lacks (never the token).
Status NoToken(const std::string& key);

struct PreparedWheel {
  std::string filename;
  std::string sha256;
  int64_t size = 0;
};

// Applies `label` to the stored wheel of `artifact`. A rewritten wheel must pass
// farm::wheel::InspectWheel and is then added to `blobs`; an unchanged one is the stored
// blob itself. Scratch files live under `work_dir` and are removed.
Result<PreparedWheel> LabelWheel(store::BlobStore& blobs, const std::string& work_dir,
                                 const store::ArtifactRow& artifact, const std::string& label);

// Why a build's release cannot be published yet ("" when it can): the build is still
// running, some wheel waits for validation, or an asset row is not uploaded.
std::string ReleaseWaitReason(int build_state, const std::vector<store::PublicationRow>& rows,
                              bool wheels_waiting_for_validation);

// The GitHub asset rows of other builds of `recipe_name` that put a wheel now listed in
// `assets` on the release of `release` (same repo and tag, same name, and the same bytes
// when GitHub reports a digest). Reads the newest builds first, a bounded number of them.
Result<std::vector<store::PublicationRow>> EarlierAssetRows(store::Store& store,
                                                            const std::string& recipe_name,
                                                            const store::PublicationRow& release,
                                                            const std::vector<GitHubAsset>& assets);

// The release notes: one row per wheel asset on the release, in the release's order, with
// the cell, SASS archs (stored manifest, else read from the published wheel), validation
// evidence and sha256 for wheels of `rows` (this build) or `earlier`, and only name and
// digest for wheels the farm has no record of; this build's uploaded rows missing from
// `assets` are added at the end. The pip line's download base comes from the assets'
// download URLs.
Result<std::string> RenderBuildNotes(store::Store& store, store::BlobStore& blobs,
                                     const farm::v1::Recipe& recipe,
                                     const std::vector<store::PublicationRow>& rows,
                                     const std::vector<GitHubAsset>& assets,
                                     const std::vector<store::PublicationRow>& earlier,
                                     const std::string& find_links_url);

}  // namespace farm::publish

#endif  // FARM_DAEMON_PUBLISH_OUTBOX_INTERNAL_H_
