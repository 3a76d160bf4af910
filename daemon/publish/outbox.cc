// The publisher loop: scanning for publishable wheels, and working outbox rows.
#include "daemon/publish/outbox.h"

#include <algorithm>
#include <filesystem>

#include "common/log.h"
#include "common/sha256.h"
#include "common/wheel/identity.h"
#include "common/wheel/inspect.h"
#include "common/wheel/relabel.h"
#include "daemon/publish/outbox_internal.h"

namespace farm::publish {
namespace {

// The arch label of a stored manifest, "" when it names no image (or cannot be read).
std::string ArchOf(const std::string& manifest_blob) {
  farm::v1::ArchManifest manifest;
  (void)manifest.ParseFromString(manifest_blob);
  auto images = wheel::ManifestImages(manifest);
  return images.ok() ? wheel::ArchLabel(*images) : "";
}

}  // namespace

namespace {

constexpr int kCandidatePage = 200;
constexpr int kMaxCandidatePages = 500;
constexpr int kMaxDueRows = 500;

// Why a build's release is not made at all ("" when it is): every wheel of it was too
// large for GitHub Releases.
std::string NothingToRelease(const std::vector<store::PublicationRow>& rows) {
  int assets = 0, refused = 0;
  for (const auto& r : rows) {
    if (r.target != "github" || r.kind != "asset") continue;
    ++assets;
    if (r.state == store::PublicationState::kRefused) ++refused;
  }
  if (assets == 0 || refused < assets) return "";
  return "no release: every wheel of the build is too large for GitHub Releases (see the "
         "asset rows)";
}

bool Transient(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted || s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kDeadlineExceeded || s.code() == StatusCode::kAborted;
}

}  // namespace

void StoppableSleeper::SleepMs(int64_t ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(ms, 0)),
               [this] { return stopped_; });
}

void StoppableSleeper::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

Publisher::Publisher(PublisherDeps deps, PublisherOptions options)
    : deps_(deps), options_(std::move(options)) {}

Publisher::~Publisher() { Stop(); }

void Publisher::Start() {
  thread_ = std::thread([this] {
    for (;;) {
      auto worked = RunOnce();
      if (!worked.ok()) log::Warn("publisher pass failed: " + worked.status().ToString());
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                       [this] { return stopped_; })) {
        return;
      }
    }
  });
}

void Publisher::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<int> Publisher::RunOnce() {
  FARM_RETURN_IF_ERROR(Scan());
  FARM_ASSIGN_OR_RETURN(auto due,
                        deps_.store->ListDuePublications(deps_.clock->NowUnixMs(), kMaxDueRows));
  int worked = 0;
  for (auto& row : due) {
    {
      std::lock_guard lock(mu_);
      if (stopped_) break;
    }
    FARM_RETURN_IF_ERROR(Work(std::move(row)));
    ++worked;
  }
  return worked;
}

Result<farm::v1::Recipe> Publisher::RecipeOf(int64_t build_id) {
  auto cached = recipes_.find(build_id);
  if (cached != recipes_.end()) return cached->second;
  FARM_ASSIGN_OR_RETURN(auto build, deps_.store->GetBuild(build_id));
  farm::v1::Recipe recipe;
  if (!recipe.ParseFromString(build.recipe)) {
    return Status::DataLoss("stored recipe of build " + std::to_string(build_id) +
                            " is unreadable");
  }
  if (recipes_.size() > 10'000) recipes_.clear();
  recipes_[build_id] = recipe;
  return recipe;
}

Status Publisher::Scan() {
  waiting_builds_.clear();
  int64_t after = 0;
  for (int page = 0; page < kMaxCandidatePages; ++page) {
    FARM_ASSIGN_OR_RETURN(auto candidates,
                          deps_.store->ListPublishCandidates(after, kCandidatePage));
    for (const auto& c : candidates) {
      FARM_RETURN_IF_ERROR(PlanArtifact(c));
      after = c.artifact.id;
    }
    if (static_cast<int>(candidates.size()) < kCandidatePage) break;
  }
  return Status::Ok();
}

Status Publisher::PlanArtifact(const store::PublishCandidate& c) {
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, RecipeOf(c.build_id));
  const int64_t now = deps_.clock->NowUnixMs();
  const auto& spec = recipe.publish();
  if (spec.github_repo().empty() && spec.hf_repo().empty()) {
    return deps_.store->EnqueuePublications(c.artifact.id, "no-target", {}, now);
  }
  farm::v1::MatrixCell cell;
  (void)cell.ParseFromString(c.cell);
  if (wheel::IsTorchCandidate(recipe, cell.torch())) {
    // Kept off the public destinations as off the default index views: users get the final
    // release's build of the cell (docs/publishing.md).
    return deps_.store->EnqueuePublications(c.artifact.id, "release-candidate", {}, now);
  }
  farm::v1::ValidationReport report;
  (void)report.ParseFromString(c.artifact.validation);
  if (report.state() == farm::v1::VALIDATION_FAILED) {
    return deps_.store->EnqueuePublications(c.artifact.id, "validation-failed", {}, now);
  }
  if (report.state() != farm::v1::VALIDATION_PASSED && !options_.publish_pending_hardware) {
    waiting_builds_.insert(c.build_id);  // its release waits for this wheel's validation
    return Status::Ok();
  }
  std::vector<store::PublicationRow> rows =
      PlanRows(recipe, c.build_id, c.artifact.id, cell, ArchOf(c.artifact.manifest));
  log::Info("publishing " + c.artifact.filename + " of build " + std::to_string(c.build_id) + ": " +
            std::to_string(rows.size()) + " outbox row(s)");
  return deps_.store->EnqueuePublications(c.artifact.id, "queued", rows, now);
}

Status Publisher::Work(store::PublicationRow row) {
  if (row.kind == "release") {
    FARM_ASSIGN_OR_RETURN(bool worked, PublishGitHubRelease(&row));
    (void)worked;
    return Status::Ok();
  }
  row.state = store::PublicationState::kUploading;
  row.attempts += 1;
  FARM_RETURN_IF_ERROR(deps_.store->UpdatePublication(row, deps_.clock->NowUnixMs()));
  Status outcome = Prepare(&row);
  if (outcome.ok()) outcome = CheckSize(row);
  if (outcome.ok()) {
    outcome = row.target == "github" ? UploadGitHubAsset(&row) : UploadHfFile(&row);
  }
  return Finish(&row, outcome);
}

Status Publisher::CheckSize(const store::PublicationRow& row) {
  wheel::UploadLimit limit =
      row.target == "github"
          ? wheel::UploadLimit{"GitHub Releases", options_.github_max_asset_bytes,
                               options_.github_max_asset_bytes == wheel::kGitHubMaxAssetBytes
                                   ? "GitHub's documented limit: under 2 GiB"
                                   : "farmd's --github-max-asset-bytes"}
          : wheel::UploadLimit{"the Hugging Face Hub", options_.hf_max_file_bytes,
                               options_.hf_max_file_bytes == wheel::kHubMaxFileBytes
                                   ? "the Hub's documented limit: 50 GB"
                                   : "farmd's --hf-max-file-bytes"};
  if (limit.max_bytes <= 0 || row.size <= limit.max_bytes) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto artifact, deps_.store->GetArtifact(row.artifact_id));
  farm::v1::ArchManifest manifest;
  (void)manifest.ParseFromString(artifact.manifest);
  return Status(StatusCode::kOutOfRange,
                wheel::TooLargeMessage(limit, row.filename, row.size, manifest));
}

Status Publisher::Finish(store::PublicationRow* row, const Status& outcome) {
  const int64_t now = deps_.clock->NowUnixMs();
  std::string what = row->target + " " + row->kind + " " +
                     (row->filename.empty() ? row->ref : row->filename) + " (build " +
                     std::to_string(row->build_id) + ", attempt " + std::to_string(row->attempts) +
                     ")";
  if (outcome.ok()) {
    row->state = row->kind == "asset" ? store::PublicationState::kUploaded
                                      : store::PublicationState::kPublished;
    row->error.clear();
    row->not_before_ms = 0;
    log::Info("published " + what + (row->remote_url.empty() ? "" : ": " + row->remote_url));
  } else if (outcome.code() == StatusCode::kOutOfRange) {
    row->state = store::PublicationState::kRefused;
    row->error = log::Redact(outcome.message());
    row->not_before_ms = 0;
    log::Warn("publishing " + what + " refused: " + row->error);
  } else if (Transient(outcome) && row->attempts < options_.max_attempts) {
    row->state = store::PublicationState::kPending;
    row->error = log::Redact(outcome.ToString());
    int shift = std::min(row->attempts - 1, 20);
    row->not_before_ms = now + std::min(options_.backoff_base_ms << shift, options_.backoff_max_ms);
    log::Warn("publishing " + what + " will be retried: " + row->error);
  } else {
    row->state = store::PublicationState::kFailed;
    row->error = log::Redact(outcome.ToString());
    log::Error("publishing " + what + " failed: " + row->error);
  }
  return deps_.store->UpdatePublication(*row, now);
}

Status Publisher::Prepare(store::PublicationRow* row) {
  if (!row->sha256.empty() && deps_.blobs->Contains(row->sha256)) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto siblings, deps_.store->ListPublications(row->build_id));
  for (const auto& s : siblings) {
    if (s.artifact_id == row->artifact_id && !s.sha256.empty() && deps_.blobs->Contains(s.sha256)) {
      row->label = s.label;
      row->filename = s.filename;
      row->sha256 = s.sha256;
      row->size = s.size;
      return Status::Ok();
    }
  }
  FARM_ASSIGN_OR_RETURN(auto artifact, deps_.store->GetArtifact(row->artifact_id));
  FARM_ASSIGN_OR_RETURN(auto job, deps_.store->GetJob(artifact.job_id));
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, RecipeOf(row->build_id));
  farm::v1::MatrixCell cell;
  (void)cell.ParseFromString(job.cell);
  // The identity label (common/wheel/identity.h): the worker applied it already, so the
  // published file is the stored one; wheels stored before labelling get it here.
  farm::v1::ArchManifest manifest;
  (void)manifest.ParseFromString(artifact.manifest);
  FARM_ASSIGN_OR_RETURN(auto images, wheel::ManifestImages(manifest));
  FARM_ASSIGN_OR_RETURN(std::string label, wheel::RecipeWheelLabel(recipe, cell, images));
  FARM_ASSIGN_OR_RETURN(PreparedWheel wheel,
                        LabelWheel(*deps_.blobs, options_.work_dir, artifact, label));
  FARM_RETURN_IF_ERROR(deps_.store->SetPublicationFile(
      row->artifact_id, label, wheel.filename, wheel.sha256, wheel.size, deps_.clock->NowUnixMs()));
  row->label = label;
  row->filename = wheel.filename;
  row->sha256 = wheel.sha256;
  row->size = wheel.size;
  return Status::Ok();
}

Status Publisher::UploadGitHubAsset(store::PublicationRow* row) {
  if (deps_.github == nullptr) return NoToken("GITHUB_TOKEN");
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, RecipeOf(row->build_id));
  FARM_ASSIGN_OR_RETURN(GitHubRelease release,
                        deps_.github->GetOrCreateDraftRelease(ReleaseSpecFor(recipe, *row)));
  if (IsLockedRelease(release)) return CheckLockedAsset(row, release);
  FARM_ASSIGN_OR_RETURN(std::string blob, deps_.blobs->LocalPath(row->sha256));
  AssetUpload upload{.local_path = blob,
                     .name = row->filename,
                     .content_type = "application/zip",
                     .sha256_hex = row->sha256,
                     .replace = row->replace_remote};
  FARM_ASSIGN_OR_RETURN(AssetResult result, deps_.github->UploadAsset(row->repo, release, upload));
  row->remote_id = std::to_string(result.asset.id);
  row->remote_url = result.asset.browser_download_url;
  return UploadGitHubProvenance(*row, release);
}

Status Publisher::CheckLockedAsset(store::PublicationRow* row, const GitHubRelease& release) {
  // Every asset of the build for this tag, so one message names all that cannot go up.
  FARM_ASSIGN_OR_RETURN(auto siblings, deps_.store->ListPublications(row->build_id));
  std::vector<WantedAsset> wanted;
  for (auto& s : siblings) {
    if (s.target != "github" || s.kind != "asset" || s.repo != row->repo || s.ref != row->ref ||
        s.state == store::PublicationState::kRefused) {
      continue;
    }
    if (s.id == row->id) s = *row;
    FARM_RETURN_IF_ERROR(Prepare(&s));  // the file name is known once the wheel is labelled
    wanted.push_back({s.filename, s.sha256});
  }
  FARM_ASSIGN_OR_RETURN(auto assets, deps_.github->ListAssets(row->repo, release.id));
  FARM_RETURN_IF_ERROR(CheckLockedRelease(row->repo, release, assets, wanted));
  const std::string name = SanitizeAssetName(row->filename);
  for (const auto& a : assets) {
    if (a.name != name) continue;
    row->remote_id = std::to_string(a.id);
    row->remote_url = a.browser_download_url;
  }
  log::Info("asset " + name + " already on immutable release " + row->ref + " of " + row->repo);
  return Status::Ok();
}

Status Publisher::UploadHfFile(store::PublicationRow* row) {
  if (deps_.hf == nullptr) return NoToken("HF_TOKEN");
  row->path = RenderHfPath(row->path, "", row->filename);
  FARM_RETURN_IF_ERROR(deps_.hf->CreateRepo(row->repo));
  FARM_ASSIGN_OR_RETURN(std::string blob, deps_.blobs->LocalPath(row->sha256));
  HfUploadRequest request{
      .repo_id = row->repo,
      .revision = row->ref.empty() ? "main" : row->ref,
      .local_path = blob,
      .path_in_repo = row->path,
      .sha256_hex = row->sha256,
      .summary = "Upload " + row->filename + " (build " + std::to_string(row->build_id) + ")",
      .replace = row->replace_remote};
  FARM_ASSIGN_OR_RETURN(HfUploadResult result, deps_.hf->UploadFile(request));
  if (!result.commit_oid.empty()) row->remote_id = result.commit_oid;
  if (!result.commit_url.empty()) row->remote_url = result.commit_url;
  return UploadHfProvenance(*row);
}

Result<bool> Publisher::PublishGitHubRelease(store::PublicationRow* row) {
  if (deps_.github == nullptr) {
    if (row->state != store::PublicationState::kFailed)
      FARM_RETURN_IF_ERROR(Finish(row, NoToken("GITHUB_TOKEN")));
    return true;
  }
  FARM_ASSIGN_OR_RETURN(auto build, deps_.store->GetBuild(row->build_id));
  FARM_ASSIGN_OR_RETURN(auto rows, deps_.store->ListPublications(row->build_id));
  std::string wait = ReleaseWaitReason(build.state, rows, waiting_builds_.count(row->build_id) > 0);
  if (!wait.empty()) {
    if (row->error != wait) {
      row->error = wait;
      FARM_RETURN_IF_ERROR(deps_.store->UpdatePublication(*row, deps_.clock->NowUnixMs()));
    }
    return false;
  }
  row->state = store::PublicationState::kUploading;
  row->attempts += 1;
  FARM_RETURN_IF_ERROR(deps_.store->UpdatePublication(*row, deps_.clock->NowUnixMs()));
  if (std::string none = NothingToRelease(rows); !none.empty()) {
    FARM_RETURN_IF_ERROR(Finish(row, Status(StatusCode::kOutOfRange, none)));
    return true;
  }
  FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, RecipeOf(row->build_id));
  Status outcome = [&]() -> Status {
    FARM_ASSIGN_OR_RETURN(GitHubRelease release,
                          deps_.github->GetOrCreateDraftRelease(ReleaseSpecFor(recipe, *row)));
    // The notes cover every wheel on the release: a published one may hold earlier builds'.
    FARM_ASSIGN_OR_RETURN(auto assets, deps_.github->ListAssets(row->repo, release.id));
    FARM_ASSIGN_OR_RETURN(std::string notes, NotesFor(recipe, *row, rows, assets));
    if (notes != release.body) {
      FARM_RETURN_IF_ERROR(deps_.github->SetReleaseNotes(row->repo, release.id, notes).status());
    }
    Status sums = UploadGitHubChecksums(row->repo, release, assets, rows);
    if (!sums.ok() && release.draft) return sums;
    if (!sums.ok()) {  // an immutable published release takes no new file
      log::Warn("SHA256SUMS of release " + row->ref + " not updated: " + sums.ToString());
    }
    GitHubRelease published = release;  // a published release stays as it is
    if (release.draft) {
      FARM_ASSIGN_OR_RETURN(published, deps_.github->PublishRelease(row->repo, release.id));
    }
    row->remote_id = std::to_string(published.id);
    row->remote_url = published.html_url;
    return Status::Ok();
  }();
  if (!outcome.ok()) {
    FARM_RETURN_IF_ERROR(Finish(row, outcome));
    return true;
  }
  FARM_RETURN_IF_ERROR(deps_.store->MarkReleasePublished(
      row->build_id, row->remote_id, row->remote_url, deps_.clock->NowUnixMs()));
  log::Info("published release " + row->ref + " of build " + std::to_string(row->build_id) +
            " on " + row->repo);
  return true;
}

}  // namespace farm::publish
