// Publisher: farmd's publication outbox worker. It turns wheels of succeeded jobs into
// outbox rows (store::PublicationRow, one per artifact and target, plus one GitHub release
// row per build) and works the rows: label the wheel (RelabelWheel, kept in the blob
// store), attach it to the build's draft release or commit it to the Hub, and publish the
// release once the build is over and every asset is up. docs/publishing.md has the states.
//
// A tag whose release is already published (another build of the same version, or a
// re-run) takes the new assets directly when GitHub lets it, and its notes are then
// rendered again over every wheel on the release, earlier builds' included. An immutable
// published release takes nothing: the build's asset rows fail at once naming what is
// missing, unless every wanted asset is already there with the same digest.
//
// Size: a wheel larger than its destination takes (GitHub's 2 GiB per asset, the Hub's
// 50 GB per file, or what farmd's flags say) is refused before anything is sent: its row
// becomes "refused" with the limit, the size and the largest parts, and every other
// destination and wheel goes on without it.
//
// Crash safety: a row is set "uploading" (attempts + 1) before any remote call, and the
// remote calls look at the remote first (asset list and digest; Hub head and paths-info),
// so a row found "uploading" after a restart is simply worked again and finds the upload
// that landed instead of repeating it. The relabelled wheel is stored by content before
// its row names it, and relabelling is deterministic, so a repeat gives the same digest.
//
// Secrets: the targets hold the tokens; no row, log line or error stored here carries one
// (every message passes farm::log::Redact).
//
// Thread-safety: RunOnce() must not run concurrently with itself; Start() runs it on one
// thread until Stop(). The targets are called from that thread only.
#ifndef FARM_DAEMON_PUBLISH_OUTBOX_H_
#define FARM_DAEMON_PUBLISH_OUTBOX_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/httpc/retrying_http_client.h"
#include "common/status.h"
#include "common/wheel/upload_limits.h"
#include "daemon/publish/github_releases.h"
#include "daemon/publish/hf_hub.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::attest {
class Attestor;
}  // namespace farm::attest

namespace farm::publish {

// The GitHub calls the publisher makes; GitHubClientTarget forwards to the real client.
class GitHubTarget {
 public:
  virtual ~GitHubTarget() = default;
  virtual Result<GitHubRelease> GetOrCreateDraftRelease(const ReleaseSpec& spec) = 0;
  virtual Result<AssetResult> UploadAsset(const std::string& repo, const GitHubRelease& release,
                                          const AssetUpload& upload) = 0;
  virtual Result<std::vector<GitHubAsset>> ListAssets(const std::string& repo,
                                                      int64_t release_id) = 0;
  virtual Result<GitHubRelease> SetReleaseNotes(const std::string& repo, int64_t release_id,
                                                const std::string& body) = 0;
  virtual Result<GitHubRelease> PublishRelease(const std::string& repo, int64_t release_id) = 0;
};

// The Hub calls the publisher makes; HfClientTarget forwards to the real client.
class HfTarget {
 public:
  virtual ~HfTarget() = default;
  virtual Status CreateRepo(const std::string& repo_id) = 0;
  virtual Result<HfUploadResult> UploadFile(const HfUploadRequest& request) = 0;
};

class GitHubClientTarget final : public GitHubTarget {
 public:
  explicit GitHubClientTarget(GitHubReleasesClient& client) : client_(client) {}
  Result<GitHubRelease> GetOrCreateDraftRelease(const ReleaseSpec& spec) override {
    return client_.GetOrCreateDraftRelease(spec);
  }
  Result<AssetResult> UploadAsset(const std::string& repo, const GitHubRelease& release,
                                  const AssetUpload& upload) override {
    return client_.UploadAsset(repo, release, upload);
  }
  Result<std::vector<GitHubAsset>> ListAssets(const std::string& repo, int64_t id) override {
    return client_.ListAssets(repo, id);
  }
  Result<GitHubRelease> SetReleaseNotes(const std::string& repo, int64_t id,
                                        const std::string& body) override {
    return client_.SetReleaseNotes(repo, id, body);
  }
  Result<GitHubRelease> PublishRelease(const std::string& repo, int64_t id) override {
    return client_.PublishRelease(repo, id);
  }

 private:
  GitHubReleasesClient& client_;
};

class HfClientTarget final : public HfTarget {
 public:
  explicit HfClientTarget(HfHubClient& client) : client_(client) {}
  Status CreateRepo(const std::string& repo_id) override {
    return client_.CreateRepo(repo_id, /*private_repo=*/false);
  }
  Result<HfUploadResult> UploadFile(const HfUploadRequest& request) override {
    return client_.UploadFile(request);
  }

 private:
  HfHubClient& client_;
};

// A httpc::Sleeper whose waits end early once Stop() is called, so a rate-limit wait inside a
// client never holds farmd's shutdown. Thread-safe.
class StoppableSleeper final : public httpc::Sleeper {
 public:
  void SleepMs(int64_t ms) override;
  void Stop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

struct PublisherOptions {
  // Also publish wheels whose validation waits for hardware (or never ran). Wheels whose
  // validation failed are never published.
  bool publish_pending_hardware = false;
  int64_t interval_ms = 1000;      // between passes of the loop
  int max_attempts = 8;            // transient failures before a row is failed
  int64_t backoff_base_ms = 2000;  // doubling per attempt
  int64_t backoff_max_ms = 600'000;
  std::string work_dir;        // scratch space for relabelled wheels
  std::string find_links_url;  // optional, for the release notes' pip line
  // The largest file each destination takes (docs/publishing.md, "Size limits"): a wheel
  // over one is refused before any byte goes out; 0 or less: no limit.
  int64_t github_max_asset_bytes = wheel::kGitHubMaxAssetBytes;
  int64_t hf_max_file_bytes = wheel::kHubMaxFileBytes;
};

struct PublisherDeps {
  store::Store* store = nullptr;
  store::BlobStore* blobs = nullptr;
  const Clock* clock = nullptr;
  GitHubTarget* github = nullptr;  // null: no GITHUB_TOKEN, GitHub rows fail saying so
  HfTarget* hf = nullptr;          // null: no HF_TOKEN
  // Signs the provenance that goes out with each wheel (provenance_files.cc); null: the
  // wheels go out alone.
  attest::Attestor* attestor = nullptr;
};

class Publisher {
 public:
  Publisher(PublisherDeps deps, PublisherOptions options);
  ~Publisher();

  // One pass: queues rows for wheels that became publishable, then works every due row
  // once. On success returns how many rows it worked; errors are the store's.
  Result<int> RunOnce();

  // Runs RunOnce every interval_ms on a thread until Stop(). Stop() is idempotent.
  void Start();
  void Stop();

 private:
  Status Scan();
  Status PlanArtifact(const store::PublishCandidate& candidate);
  Status Work(store::PublicationRow row);
  Status Prepare(store::PublicationRow* row);
  Status UploadGitHubAsset(store::PublicationRow* row);
  // The asset row's part when the release is locked (IsLockedRelease): OK, with the
  // asset's id and URL, when every asset of the build is there already.
  Status CheckLockedAsset(store::PublicationRow* row, const GitHubRelease& release);
  Status UploadHfFile(store::PublicationRow* row);
  // Publishes the build's release when the build is over and every asset is up; returns
  // false (row untouched) while it must wait.
  Result<bool> PublishGitHubRelease(store::PublicationRow* row);
  Result<farm::v1::Recipe> RecipeOf(int64_t build_id);
  // Notes over every wheel on `release` (this build's rows, earlier builds' rows found
  // in the store, and bare name and digest for wheels the store does not know).
  Result<std::string> NotesFor(const farm::v1::Recipe& recipe, const store::PublicationRow& release,
                               const std::vector<store::PublicationRow>& rows,
                               const std::vector<GitHubAsset>& assets);
  // The files that go out beside the wheels (provenance_files.cc): the wheel's signed
  // statements, and the signed SHA256SUMS of a release or a Hub folder.
  Result<std::string> ScratchFile(const std::string& name, const std::string& text);
  Result<std::string> ProvenanceLines(const store::PublicationRow& row);
  Status UploadGitHubProvenance(const store::PublicationRow& row, const GitHubRelease& release);
  Status UploadGitHubChecksums(const std::string& repo, const GitHubRelease& release,
                               const std::vector<GitHubAsset>& assets,
                               const std::vector<store::PublicationRow>& rows);
  Status UploadHfProvenance(const store::PublicationRow& row);
  // OutOfRange naming the limit, the size and the largest parts when the row's wheel is
  // larger than its destination takes; OK otherwise.
  Status CheckSize(const store::PublicationRow& row);
  // Stores the row's state after an attempt ended with `outcome`: done, back to pending
  // with a backoff (transient errors below max_attempts), refused (OutOfRange: too large
  // for the destination), or failed.
  Status Finish(store::PublicationRow* row, const Status& outcome);

  PublisherDeps deps_;
  PublisherOptions options_;
  std::map<int64_t, farm::v1::Recipe> recipes_;  // by build id; recipes never change
  std::set<int64_t> waiting_builds_;  // builds with wheels waiting for validation (last scan)
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

// Fills {name}, {version} and {build_id} of a tag template; "" selects
// "v{version}-build{build_id}". Unknown placeholders stay as written.
std::string RenderTag(const std::string& tag_template, const farm::v1::Recipe& recipe,
                      int64_t build_id);

// The Hub variant directory of a cell: HfKernelVariant for torch builds, and
// "cu130-x86_64-linux" for packages without torch.
std::string HfVariant(const farm::v1::MatrixCell& cell);

}  // namespace farm::publish

#endif  // FARM_DAEMON_PUBLISH_OUTBOX_H_
