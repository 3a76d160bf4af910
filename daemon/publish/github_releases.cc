#include "daemon/publish/github_releases.h"

#include <algorithm>
#include <cctype>

#include "common/httpc/http_util.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace farm::publish {

namespace json = boost::json;

struct GitHubReleasesClient::LocalFile {
  std::string path;
  std::string name;
  std::string sha256_hex;
  int64_t size = 0;
  std::string content_type;
};

namespace {

GitHubAsset ParseAsset(const json::object& o) {
  GitHubAsset a;
  a.id = httpc::JsonInt(o, "id");
  a.name = httpc::JsonString(o, "name");
  a.label = httpc::JsonString(o, "label");
  a.state = httpc::JsonString(o, "state");
  a.content_type = httpc::JsonString(o, "content_type");
  a.size = httpc::JsonInt(o, "size");
  a.digest = httpc::JsonString(o, "digest");
  a.url = httpc::JsonString(o, "url");
  a.browser_download_url = httpc::JsonString(o, "browser_download_url");
  return a;
}

GitHubRelease ParseRelease(const json::object& o) {
  GitHubRelease r;
  r.id = httpc::JsonInt(o, "id");
  r.tag_name = httpc::JsonString(o, "tag_name");
  r.name = httpc::JsonString(o, "name");
  r.body = httpc::JsonString(o, "body");
  r.draft = httpc::JsonBool(o, "draft");
  r.prerelease = httpc::JsonBool(o, "prerelease");
  r.immutable = httpc::JsonBool(o, "immutable");
  r.html_url = httpc::JsonString(o, "html_url");
  r.upload_url = httpc::JsonString(o, "upload_url");
  return r;
}

bool IsTransientFailure(const Result<httpc::HttpResponse>& outcome) {
  return !outcome.ok() || outcome.value().status >= 500;
}

std::string FailureText(const Result<httpc::HttpResponse>& outcome, const std::string& what) {
  return outcome.ok() ? httpc::HttpError(what, outcome.value()).message()
                      : outcome.status().message();
}

bool DigestMatches(const GitHubAsset& asset, const std::string& sha256_hex) {
  return asset.digest == "sha256:" + sha256_hex;
}

bool IsComplete(const GitHubAsset& asset) { return asset.state == "uploaded"; }

const GitHubAsset* FindAsset(const std::vector<GitHubAsset>& assets, const std::string& name) {
  for (const auto& a : assets) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Says why nothing can be added and what the operator can do instead; no retry helps.
Status LockedReleaseError(const std::string& repo, const std::string& tag,
                          const std::vector<std::string>& missing,
                          const std::vector<std::string>& differing) {
  std::string text = "release " + tag + " of " + repo +
                     " is published and immutable, so GitHub accepts no new or changed assets";
  if (!missing.empty()) text += "; missing: " + JoinNames(missing);
  if (!differing.empty()) text += "; different bytes: " + JoinNames(differing);
  text +=
      ". Nothing was uploaded. Publish these wheels under a new tag: bump the recipe's "
      "version or change publish.github_tag_template (e.g. include {build_id})";
  return Status::FailedPrecondition(log::Redact(text));
}

Status ValidateRepo(const std::string& repo) {
  size_t slash = repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size() ||
      repo.find('/', slash + 1) != std::string::npos) {
    return Status::InvalidArgument("repository must be owner/name, got '" + repo + "'");
  }
  return Status::Ok();
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string MediaTypeFor(const std::string& name) {
  auto ends_with = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with(".whl") || ends_with(".zip") ? "application/zip" : "application/octet-stream";
}

}  // namespace

bool IsLockedRelease(const GitHubRelease& release) { return !release.draft && release.immutable; }

Status CheckLockedRelease(const std::string& repo, const GitHubRelease& release,
                          const std::vector<GitHubAsset>& assets,
                          const std::vector<WantedAsset>& wanted) {
  std::vector<std::string> missing, differing;
  for (const auto& w : wanted) {
    const std::string name = SanitizeAssetName(w.name);
    const GitHubAsset* a = FindAsset(assets, name);
    if (a == nullptr || !IsComplete(*a)) {
      missing.push_back(name);
    } else if (!DigestMatches(*a, w.sha256_hex)) {
      differing.push_back(name + " (release has " +
                          (a->digest.empty() ? std::string("no digest") : a->digest) +
                          ", built sha256:" + w.sha256_hex + ")");
    }
  }
  if (missing.empty() && differing.empty()) return Status::Ok();
  return LockedReleaseError(repo, release.tag_name, missing, differing);
}

bool IsImmutableRejection(const httpc::HttpResponse& response) {
  if (response.status != 422) return false;
  return AsciiLower(response.body).find("immutable release") != std::string::npos;
}

bool IsSizeRejection(const httpc::HttpResponse& response) {
  if (response.status != 422) return false;
  std::string body = response.body;
  std::transform(body.begin(), body.end(), body.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return body.find("\"field\":\"size\"") != std::string::npos ||
         body.find("size must be less than") != std::string::npos;
}

std::string SanitizeAssetName(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '+' || c == '@';
    if (keep) {
      out += c;
    } else if (out.empty() || out.back() != '.') {
      out += '.';
    }
  }
  size_t first = out.find_first_not_of('.');
  size_t last = out.find_last_not_of('.');
  out = first == std::string::npos ? "" : out.substr(first, last - first + 1);
  if (!name.empty() && name[0] == '.') out = "default." + out;
  return out;
}

std::string TemporaryAssetName(const std::string& name, const std::string& sha256_hex) {
  return "farm-tmp-" + sha256_hex.substr(0, 12) + "-" + name;
}

std::string ExpandUploadUrl(const std::string& upload_url, const std::string& name,
                            const std::string& label) {
  std::string url = upload_url.substr(0, upload_url.find('{'));
  url += "?name=" + httpc::PercentEncode(name);
  if (!label.empty()) url += "&label=" + httpc::PercentEncode(label);
  return url;
}

GitHubReleasesClient::GitHubReleasesClient(httpc::RetryingHttpClient& http, GitHubOptions options)
    : http_(http), options_(std::move(options)) {
  log::RegisterSecret(options_.token);
}

httpc::HttpRequest GitHubReleasesClient::NewRequest(const std::string& method,
                                                    const std::string& url) const {
  httpc::HttpRequest r;
  r.method = method;
  r.url = url;
  r.follow_redirects = true;  // GitHub may answer 301/302/307 for renamed repositories
  r.headers.Set("Authorization", "Bearer " + options_.token);
  r.headers.Set("Accept", "application/vnd.github+json");
  r.headers.Set("X-GitHub-Api-Version", options_.api_version);
  r.headers.Set("User-Agent", options_.user_agent);
  return r;
}

std::string GitHubReleasesClient::RepoUrl(const std::string& repo) const {
  return options_.api_base + "/repos/" + repo;
}

Result<httpc::HttpResponse> GitHubReleasesClient::SendJson(const std::string& method,
                                                           const std::string& url,
                                                           const std::string& body,
                                                           httpc::Idempotency idempotency) {
  httpc::HttpRequest r = NewRequest(method, url);
  r.headers.Set("Content-Type", "application/json");
  r.body = body;
  return http_.Send(r, idempotency);
}

Result<std::optional<GitHubRelease>> GitHubReleasesClient::FindRelease(const std::string& repo,
                                                                       const std::string& tag) {
  FARM_RETURN_IF_ERROR(ValidateRepo(repo));
  std::string url = RepoUrl(repo) + "/releases?per_page=100";
  std::optional<GitHubRelease> found;
  for (int page = 0; page < options_.max_list_pages && !url.empty(); ++page) {
    FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp,
                          http_.Send(NewRequest("GET", url), httpc::Idempotency::kIdempotent));
    if (resp.status != 200) return httpc::HttpError("list releases of " + repo, resp);
    FARM_ASSIGN_OR_RETURN(json::value v, httpc::ParseJson(resp.body, "release list"));
    if (!v.is_array()) return Status::InvalidArgument("release list is not an array");
    for (const auto& item : v.as_array()) {
      if (!item.is_object()) continue;
      GitHubRelease r = ParseRelease(item.as_object());
      if (r.tag_name == tag && (!found || r.id < found->id)) found = r;
    }
    url = httpc::NextLink(resp.headers);
  }
  return found;
}

Result<GitHubRelease> GitHubReleasesClient::CreateDraft(const ReleaseSpec& spec) {
  json::object body;
  body["tag_name"] = spec.tag;
  body["name"] = spec.name.empty() ? spec.tag : spec.name;
  body["body"] = spec.body;
  body["draft"] = true;
  body["prerelease"] = spec.prerelease;
  if (!spec.target_commitish.empty()) body["target_commitish"] = spec.target_commitish;
  // Not idempotent: a repeated POST after a lost response would make a second draft.
  auto outcome = SendJson("POST", RepoUrl(spec.repo) + "/releases", json::serialize(body),
                          httpc::Idempotency::kNotIdempotent);
  if (outcome.ok() && outcome.value().status == 201) {
    FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(outcome.value(), "created release"));
    return ParseRelease(o);
  }
  if (outcome.ok() && outcome.value().status != 422 && !IsTransientFailure(outcome)) {
    return httpc::HttpError("create release " + spec.tag + " in " + spec.repo, outcome.value());
  }
  return Status::Unavailable(
      log::Redact("create release " + spec.tag + ": " + FailureText(outcome, "create release")));
}

Result<GitHubRelease> GitHubReleasesClient::GetOrCreateDraftRelease(const ReleaseSpec& spec) {
  FARM_RETURN_IF_ERROR(ValidateRepo(spec.repo));
  Status last;
  for (int attempt = 1; attempt <= options_.max_upload_attempts; ++attempt) {
    FARM_ASSIGN_OR_RETURN(auto existing, FindRelease(spec.repo, spec.tag));
    if (existing) return *existing;
    auto created = CreateDraft(spec);
    if (created.ok()) {
      log::Info("created draft release " + spec.tag + " in " + spec.repo);
      return created;
    }
    last = created.status();
    if (last.code() != StatusCode::kUnavailable) return last;
    // Lost response, 5xx or already_exists: the next listing tells which.
    log::Warn(log::Redact(last.message()));
    if (attempt > 1) http_.Backoff(attempt - 1);
  }
  return last;
}

Result<std::vector<GitHubAsset>> GitHubReleasesClient::ListAssets(const std::string& repo,
                                                                  int64_t release_id) {
  std::string url =
      RepoUrl(repo) + "/releases/" + std::to_string(release_id) + "/assets?per_page=100";
  std::vector<GitHubAsset> assets;
  for (int page = 0; page < options_.max_list_pages && !url.empty(); ++page) {
    FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp,
                          http_.Send(NewRequest("GET", url), httpc::Idempotency::kIdempotent));
    if (resp.status != 200) return httpc::HttpError("list assets of release", resp);
    FARM_ASSIGN_OR_RETURN(json::value v, httpc::ParseJson(resp.body, "asset list"));
    if (!v.is_array()) return Status::InvalidArgument("asset list is not an array");
    for (const auto& item : v.as_array()) {
      if (item.is_object()) assets.push_back(ParseAsset(item.as_object()));
    }
    url = httpc::NextLink(resp.headers);
  }
  return assets;
}

Status GitHubReleasesClient::DeleteAsset(const std::string& repo, int64_t asset_id) {
  std::string url = RepoUrl(repo) + "/releases/assets/" + std::to_string(asset_id);
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp,
                        http_.Send(NewRequest("DELETE", url), httpc::Idempotency::kIdempotent));
  if (resp.status == 204 || resp.status == 404) return Status::Ok();
  return httpc::HttpError("delete asset " + std::to_string(asset_id), resp);
}

Result<GitHubAsset> GitHubReleasesClient::RenameAsset(const std::string& repo, int64_t asset_id,
                                                      const std::string& new_name) {
  json::object body;
  body["name"] = new_name;
  std::string url = RepoUrl(repo) + "/releases/assets/" + std::to_string(asset_id);
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, SendJson("PATCH", url, json::serialize(body),
                                                           httpc::Idempotency::kIdempotent));
  if (resp.status != 200) return httpc::HttpError("rename asset to " + new_name, resp);
  FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(resp, "renamed asset"));
  return ParseAsset(o);
}

Result<GitHubRelease> GitHubReleasesClient::PatchRelease(const std::string& repo,
                                                         int64_t release_id,
                                                         const std::string& body,
                                                         const std::string& what) {
  std::string url = RepoUrl(repo) + "/releases/" + std::to_string(release_id);
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp,
                        SendJson("PATCH", url, body, httpc::Idempotency::kIdempotent));
  if (resp.status != 200) return httpc::HttpError(what, resp);
  FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(resp, "updated release"));
  return ParseRelease(o);
}

Result<GitHubRelease> GitHubReleasesClient::SetReleaseNotes(const std::string& repo,
                                                            int64_t release_id,
                                                            const std::string& notes) {
  json::object body;
  body["body"] = notes;
  return PatchRelease(repo, release_id, json::serialize(body), "set release notes");
}

Result<GitHubRelease> GitHubReleasesClient::PublishRelease(const std::string& repo,
                                                           int64_t release_id) {
  json::object body;
  body["draft"] = false;
  FARM_ASSIGN_OR_RETURN(GitHubRelease r,
                        PatchRelease(repo, release_id, json::serialize(body), "publish release"));
  log::Info("published release " + r.tag_name + " in " + repo);
  return r;
}

Result<GitHubReleasesClient::LocalFile> GitHubReleasesClient::ResolveLocalFile(
    const AssetUpload& upload) const {
  LocalFile f;
  f.path = upload.local_path;
  f.name = SanitizeAssetName(upload.name.empty() ? BaseName(upload.local_path) : upload.name);
  if (f.name.empty()) return Status::InvalidArgument("empty asset name for " + upload.local_path);
  FARM_ASSIGN_OR_RETURN(std::string hex, Sha256FileHex(upload.local_path, &f.size));
  if (!upload.sha256_hex.empty() && upload.sha256_hex != hex) {
    return Status::DataLoss("file " + upload.local_path + " has sha256 " + hex + ", expected " +
                            upload.sha256_hex);
  }
  f.sha256_hex = hex;
  f.content_type = upload.content_type.empty() ? MediaTypeFor(f.name) : upload.content_type;
  return f;
}

Result<std::optional<GitHubAsset>> GitHubReleasesClient::InspectAfterFailure(
    const std::string& repo, int64_t release_id, const std::string& name, const LocalFile& file) {
  FARM_ASSIGN_OR_RETURN(auto assets, ListAssets(repo, release_id));
  const GitHubAsset* a = FindAsset(assets, name);
  if (a == nullptr) return std::optional<GitHubAsset>();
  if (IsComplete(*a) && DigestMatches(*a, file.sha256_hex)) return std::optional(*a);
  if (IsComplete(*a)) {
    // Complete but other bytes: someone else's upload won the name; never delete it.
    return Status::AlreadyExists("conflict: asset " + name + " appeared with digest " + a->digest +
                                 " while uploading sha256:" + file.sha256_hex);
  }
  // A "starter" left by a 502: empty and safe to delete.
  log::Warn("deleting incomplete asset " + name + " (state " + a->state + ")");
  FARM_RETURN_IF_ERROR(DeleteAsset(repo, a->id));
  return std::optional<GitHubAsset>();
}

Result<GitHubAsset> GitHubReleasesClient::UploadFresh(const std::string& repo,
                                                      const GitHubRelease& release,
                                                      const LocalFile& file,
                                                      const std::string& name,
                                                      const std::string& label) {
  std::string last_error;
  for (int attempt = 1; attempt <= options_.max_upload_attempts; ++attempt) {
    httpc::HttpRequest r = NewRequest("POST", ExpandUploadUrl(release.upload_url, name, label));
    r.headers.Set("Content-Type", file.content_type);
    r.body_file = file.path;
    r.body_length = file.size;
    r.timeout_ms = 0;  // large files: only the stall limit applies
    auto outcome = http_.Send(r, httpc::Idempotency::kNotIdempotent);
    if (outcome.ok() && outcome.value().status == 201) {
      FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(outcome.value(), "uploaded asset"));
      GitHubAsset a = ParseAsset(o);
      if (!a.digest.empty() && !DigestMatches(a, file.sha256_hex)) {
        return Status::DataLoss("GitHub reports digest " + a.digest + " for " + name +
                                ", local sha256 is " + file.sha256_hex);
      }
      return a;
    }
    bool name_taken = outcome.ok() && outcome.value().status == 422 &&
                      outcome.value().body.find("already_exists") != std::string::npos;
    if (outcome.ok() && IsImmutableRejection(outcome.value())) {
      // The release object did not say so (older API answers); no later try can succeed.
      return LockedReleaseError(repo, release.tag_name, {file.name}, {});
    }
    if (outcome.ok() && IsSizeRejection(outcome.value())) {
      // farmd's own limit let it through (--github-max-asset-bytes above GitHub's).
      return Status(StatusCode::kOutOfRange,
                    httpc::HttpError("too large for GitHub Releases: upload asset " + name + " (" +
                                         std::to_string(file.size) + " bytes)",
                                     outcome.value())
                        .message());
    }
    if (outcome.ok() && !IsTransientFailure(outcome) && !name_taken) {
      return httpc::HttpError("upload asset " + name, outcome.value());
    }
    last_error = FailureText(outcome, "upload asset " + name);
    // After a 422 (name taken) or an unknown outcome, the release itself says what happened.
    FARM_ASSIGN_OR_RETURN(auto landed, InspectAfterFailure(repo, release.id, name, file));
    if (landed) return *landed;  // the response was lost but the upload is complete
    log::Warn(log::Redact(last_error));
    if (attempt < options_.max_upload_attempts) http_.Backoff(attempt);
  }
  return Status::Unavailable(log::Redact("upload of " + name + " failed after " +
                                         std::to_string(options_.max_upload_attempts) +
                                         " attempts: " + last_error));
}

Result<AssetResult> GitHubReleasesClient::UploadAsset(const std::string& repo,
                                                      const GitHubRelease& release,
                                                      const AssetUpload& upload) {
  FARM_RETURN_IF_ERROR(ValidateRepo(repo));
  FARM_ASSIGN_OR_RETURN(LocalFile file, ResolveLocalFile(upload));
  FARM_ASSIGN_OR_RETURN(auto assets, ListAssets(repo, release.id));
  const GitHubAsset* existing = FindAsset(assets, file.name);
  if (IsLockedRelease(release)) {
    // Checked before any upload: GitHub would refuse it, and nothing there may be deleted.
    FARM_RETURN_IF_ERROR(CheckLockedRelease(repo, release, assets, {{file.name, file.sha256_hex}}));
    log::Info("asset " + file.name + " already present on immutable release " + release.tag_name);
    return AssetResult{*existing, AssetOutcome::kAlreadyPresent};
  }
  if (existing != nullptr && !IsComplete(*existing)) {
    FARM_RETURN_IF_ERROR(DeleteAsset(repo, existing->id));  // a starter from a past 502
    existing = nullptr;
  }
  if (existing != nullptr && DigestMatches(*existing, file.sha256_hex)) {
    log::Info("asset " + file.name + " already present with the same digest");
    return AssetResult{*existing, AssetOutcome::kAlreadyPresent};
  }
  if (existing != nullptr && !upload.replace) {
    return Status::AlreadyExists(
        "conflict: asset " + file.name + " already exists in release " + release.tag_name +
        " with digest " + (existing->digest.empty() ? "(unknown)" : existing->digest) +
        " but the local file is sha256:" + file.sha256_hex + "; set replace to overwrite it");
  }
  if (existing != nullptr) return Replace(repo, release, assets, *existing, file, upload.label);
  // A replacement interrupted after the old copy was deleted: finish the rename.
  std::string temp_name = TemporaryAssetName(file.name, file.sha256_hex);
  const GitHubAsset* temp = FindAsset(assets, temp_name);
  if (temp != nullptr && IsComplete(*temp) && DigestMatches(*temp, file.sha256_hex)) {
    FARM_ASSIGN_OR_RETURN(GitHubAsset renamed, RenameAsset(repo, temp->id, file.name));
    return AssetResult{renamed, AssetOutcome::kReplaced};
  }
  FARM_ASSIGN_OR_RETURN(GitHubAsset uploaded,
                        UploadFresh(repo, release, file, file.name, upload.label));
  log::Info("uploaded asset " + file.name + " (" + std::to_string(file.size) + " bytes)");
  return AssetResult{uploaded, AssetOutcome::kUploaded};
}

Result<AssetResult> GitHubReleasesClient::Replace(const std::string& repo,
                                                  const GitHubRelease& release,
                                                  const std::vector<GitHubAsset>& assets,
                                                  const GitHubAsset& old_asset,
                                                  const LocalFile& file, const std::string& label) {
  std::string temp_name = TemporaryAssetName(file.name, file.sha256_hex);
  std::optional<GitHubAsset> staged;
  if (const GitHubAsset* t = FindAsset(assets, temp_name)) {
    if (IsComplete(*t) && DigestMatches(*t, file.sha256_hex)) {
      staged = *t;
    } else {
      FARM_RETURN_IF_ERROR(DeleteAsset(repo, t->id));
    }
  }
  if (!staged) {
    FARM_ASSIGN_OR_RETURN(staged, UploadFresh(repo, release, file, temp_name, label));
  }
  if (staged->digest.empty() && staged->size != file.size) {
    return Status::DataLoss("staged copy of " + file.name + " has the wrong size");
  }
  // Only now, with a verified new copy up, may the old one go.
  FARM_RETURN_IF_ERROR(DeleteAsset(repo, old_asset.id));
  FARM_ASSIGN_OR_RETURN(GitHubAsset renamed, RenameAsset(repo, staged->id, file.name));
  log::Info("replaced asset " + file.name + " (was " + old_asset.digest + ")");
  return AssetResult{renamed, AssetOutcome::kReplaced};
}

}  // namespace farm::publish
