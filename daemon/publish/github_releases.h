// GitHubReleasesClient: draft → attach assets → publish, over the GitHub REST API
// (docs/publishing.md describes the flow and its retry rules).
//
// Every call is safe to repeat after a crash or a lost response: releases are found by
// listing (drafts are not reachable by tag) before one is created, an asset whose name
// and sha256 digest already match is skipped, and a failed upload is followed by a look
// at the release before it is tried again (a 502 may leave an empty "starter" asset,
// which is deleted). Replacing an asset never deletes the only good copy first: the new
// file is uploaded under a temporary name, then the old asset is deleted and the new one
// renamed.
//
// Published releases: assets are added to a published release as to a draft, unless
// GitHub reports it immutable ("immutable": true, or a 422 "Cannot upload assets to an
// immutable release."). Nothing is uploaded, replaced or deleted there; an upload of
// bytes that are already present succeeds, anything else fails with FailedPrecondition
// naming the repository, tag and assets and saying to publish under a new tag.
//
// The token is registered with farm::log::RegisterSecret and only ever sent in the
// Authorization header; error messages pass through farm::log::Redact.
//
// Thread-safety: methods may be called from several threads (the httpc::RetryingHttpClient
// serializes mutations), but two concurrent uploads of the same asset name race.
#ifndef FARM_DAEMON_PUBLISH_GITHUB_RELEASES_H_
#define FARM_DAEMON_PUBLISH_GITHUB_RELEASES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/httpc/retrying_http_client.h"
#include "common/status.h"

namespace farm::publish {

struct GitHubOptions {
  std::string api_base = "https://api.github.com";  // no trailing slash
  std::string token;
  std::string user_agent = "gpu-wheel-farm";
  std::string api_version = "2022-11-28";
  int max_upload_attempts = 3;  // per asset; each failed attempt is cleaned up first
  int max_list_pages = 50;      // 100 releases or assets per page
};

struct GitHubAsset {
  int64_t id = 0;
  std::string name;
  std::string label;
  std::string state;  // "uploaded" when complete; "starter"/"open" otherwise
  std::string content_type;
  int64_t size = 0;
  std::string digest;  // "sha256:<hex>", or "" when GitHub reports none
  std::string url;     // API URL (PATCH, DELETE)
  std::string browser_download_url;
};

struct GitHubRelease {
  int64_t id = 0;
  std::string tag_name;
  std::string name;
  std::string body;
  bool draft = false;
  bool prerelease = false;
  // GitHub's "immutable": published while the repository's immutable-releases setting
  // was on, so its assets can no longer be added, changed or deleted.
  bool immutable = false;
  std::string html_url;
  std::string upload_url;  // URI template, e.g. ".../assets{?name,label}"
};

struct ReleaseSpec {
  std::string repo;  // "owner/name"
  std::string tag;
  std::string name;              // release title; empty: the tag
  std::string body;              // Markdown notes (RenderReleaseNotes)
  std::string target_commitish;  // empty: the default branch (ignored if the tag exists)
  bool prerelease = false;
};

struct AssetUpload {
  std::string local_path;
  std::string name;  // empty: the file's base name; sanitized as GitHub does
  std::string label;
  std::string content_type;  // empty: application/zip for .whl/.zip, else octet-stream
  std::string sha256_hex;    // empty: hashed from the file
  bool replace = false;      // overwrite a same-name asset whose digest differs
};

// An asset a publication wants on a release: its (unsanitized) name and bytes.
struct WantedAsset {
  std::string name;
  std::string sha256_hex;
};

enum class AssetOutcome { kUploaded, kAlreadyPresent, kReplaced };

struct AssetResult {
  GitHubAsset asset;
  AssetOutcome outcome = AssetOutcome::kUploaded;
};

class GitHubReleasesClient {
 public:
  // `http` must outlive the client. Registers options.token as a log secret.
  GitHubReleasesClient(httpc::RetryingHttpClient& http, GitHubOptions options);

  // Lists the repository's releases (drafts included, which needs push access) and
  // returns the oldest whose tag_name is `tag`, or std::nullopt when there is none.
  Result<std::optional<GitHubRelease>> FindRelease(const std::string& repo, const std::string& tag);

  // On success returns the existing release for spec.tag (draft or not, unchanged) or a
  // new draft. A create whose response is lost or rejected as already_exists is
  // resolved by listing again, so no duplicate draft is made.
  Result<GitHubRelease> GetOrCreateDraftRelease(const ReleaseSpec& spec);

  Result<std::vector<GitHubAsset>> ListAssets(const std::string& repo, int64_t release_id);

  // Attaches one file. On success the asset named (sanitized) upload.name holds exactly
  // the file's bytes: kAlreadyPresent when it already did, kUploaded or kReplaced
  // otherwise. Fails with AlreadyExists ("conflict") when a same-name asset holds other
  // bytes and upload.replace is false, and with FailedPrecondition (nothing sent) when
  // the release is immutable and does not hold the file already (IsLockedRelease).
  Result<AssetResult> UploadAsset(const std::string& repo, const GitHubRelease& release,
                                  const AssetUpload& upload);

  // Deletes an asset; OK when it is already gone.
  Status DeleteAsset(const std::string& repo, int64_t asset_id);
  Result<GitHubAsset> RenameAsset(const std::string& repo, int64_t asset_id,
                                  const std::string& new_name);

  // Replaces the release notes.
  Result<GitHubRelease> SetReleaseNotes(const std::string& repo, int64_t release_id,
                                        const std::string& body);
  // Publishes a draft (PATCH draft=false); OK on an already published release.
  Result<GitHubRelease> PublishRelease(const std::string& repo, int64_t release_id);

 private:
  httpc::HttpRequest NewRequest(const std::string& method, const std::string& url) const;
  std::string RepoUrl(const std::string& repo) const;
  Result<httpc::HttpResponse> SendJson(const std::string& method, const std::string& url,
                                       const std::string& json, httpc::Idempotency idempotency);
  Result<GitHubRelease> CreateDraft(const ReleaseSpec& spec);
  Result<GitHubRelease> PatchRelease(const std::string& repo, int64_t release_id,
                                     const std::string& json, const std::string& what);

  struct LocalFile;  // resolved name, digest, size and media type of an upload
  Result<LocalFile> ResolveLocalFile(const AssetUpload& upload) const;
  // Uploads under `name`, which must be free; cleans up after failed attempts.
  Result<GitHubAsset> UploadFresh(const std::string& repo, const GitHubRelease& release,
                                  const LocalFile& file, const std::string& name,
                                  const std::string& label);
  // One cleanup after a failed upload: returns the asset if it did land intact,
  // std::nullopt after deleting any partial one.
  Result<std::optional<GitHubAsset>> InspectAfterFailure(const std::string& repo,
                                                         int64_t release_id,
                                                         const std::string& name,
                                                         const LocalFile& file);
  Result<AssetResult> Replace(const std::string& repo, const GitHubRelease& release,
                              const std::vector<GitHubAsset>& assets, const GitHubAsset& old_asset,
                              const LocalFile& file, const std::string& label);

  httpc::RetryingHttpClient& http_;
  const GitHubOptions options_;
};

// Returns true for a published release whose assets GitHub will not change.
bool IsLockedRelease(const GitHubRelease& release);

// Decides whether `wanted` can be had on a locked release of `repo` that holds `assets`.
// On success (each wanted asset is there, complete, with the same sha256 digest) returns
// OK: a re-run that needs no upload. Otherwise returns FailedPrecondition naming repo,
// tag, the missing and the differing assets, and what to do (a new tag). Pure.
Status CheckLockedRelease(const std::string& repo, const GitHubRelease& release,
                          const std::vector<GitHubAsset>& assets,
                          const std::vector<WantedAsset>& wanted);

// Returns true when GitHub refused an upload because the release is immutable (422
// "Cannot upload assets to an immutable release.").
bool IsImmutableRejection(const httpc::HttpResponse& response);

// Whether an upload answer is GitHub refusing the file's size (422, "field":"size",
// "size must be less than or equal to 2147483648"): UploadAsset answers OutOfRange at once,
// with nothing retried.
bool IsSizeRejection(const httpc::HttpResponse& response);

// Mirrors GitHub's renaming of asset names: characters outside [A-Za-z0-9-_+@.] become
// ".", runs of dots collapse, leading/trailing dots are trimmed ("default" prefix when
// the name started with a dot).
std::string SanitizeAssetName(const std::string& name);

// The name a replacement is uploaded under before it takes over `name`.
std::string TemporaryAssetName(const std::string& name, const std::string& sha256_hex);

// Expands an upload_url template ("…/assets{?name,label}") for `name` and `label`.
std::string ExpandUploadUrl(const std::string& upload_url, const std::string& name,
                            const std::string& label);

}  // namespace farm::publish

#endif  // FARM_DAEMON_PUBLISH_GITHUB_RELEASES_H_
