// What goes out beside the wheels (docs/provenance.md): each wheel's signed provenance as
// `<wheel>.intoto.jsonl`, and per GitHub release and per Hub folder a SHA256SUMS with its
// Ed25519 signature SHA256SUMS.sig (raw 64 bytes, checkable with `openssl pkeyutl`). The
// files are written to the work directory and uploaded with the same idempotent calls as
// the wheels, replacing older copies (a later validation adds a statement).
#include <algorithm>
#include <filesystem>
#include <tuple>

#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "daemon/attest/attestor.h"
#include "daemon/publish/outbox.h"

namespace farm::publish {
namespace {

constexpr char kSums[] = "SHA256SUMS";
constexpr char kSumsSig[] = "SHA256SUMS.sig";

// "<sha256>  <name>\n" per wheel, by name, as sha256sum writes it.
std::string ChecksumsText(std::vector<std::pair<std::string, std::string>> wheels) {
  std::sort(wheels.begin(), wheels.end());
  wheels.erase(std::unique(wheels.begin(), wheels.end()), wheels.end());
  std::string out;
  for (const auto& [name, sha] : wheels) out += sha + "  " + name + "\n";
  return out;
}

// The directory part of a Hub path, with its slash ("build/cu130/"); "" at the top.
std::string HubDirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

}  // namespace

Result<std::string> Publisher::ScratchFile(const std::string& name, const std::string& text) {
  std::string path = options_.work_dir + "/" + name;
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(path, text, 0600));
  return path;
}

Result<std::string> Publisher::ProvenanceLines(const store::PublicationRow& row) {
  FARM_ASSIGN_OR_RETURN(auto envelopes, deps_.attestor->Envelopes(row.sha256));
  if (envelopes.empty()) {
    // A wheel relabelled for publishing: its statements are rebound to the new bytes.
    FARM_ASSIGN_OR_RETURN(store::ArtifactRow artifact, deps_.store->GetArtifact(row.artifact_id));
    if (artifact.sha256 != row.sha256) {
      FARM_RETURN_IF_ERROR(
          deps_.attestor->AttestRelabelled(artifact.sha256, {row.filename, row.sha256}));
      FARM_ASSIGN_OR_RETURN(envelopes, deps_.attestor->Envelopes(row.sha256));
    }
  }
  if (envelopes.empty()) return std::string();  // a wheel stored before provenance was kept
  return provenance::EnvelopeLines(envelopes);
}

Status Publisher::UploadGitHubProvenance(const store::PublicationRow& row,
                                         const GitHubRelease& release) {
  if (deps_.attestor == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::string lines, ProvenanceLines(row));
  if (lines.empty()) {
    log::Warn(row.filename + " has no signed provenance (stored before farmd kept it)");
    return Status::Ok();
  }
  FARM_ASSIGN_OR_RETURN(std::string path, ScratchFile(row.sha256 + ".intoto.jsonl", lines));
  AssetUpload upload{.local_path = path,
                     .name = row.filename + ".intoto.jsonl",
                     .content_type = "application/jsonl",
                     .sha256_hex = Sha256Hex(lines),
                     .replace = true};
  auto uploaded = deps_.github->UploadAsset(row.repo, release, upload);
  std::filesystem::remove(path);
  return uploaded.status();
}

Status Publisher::UploadGitHubChecksums(const std::string& repo, const GitHubRelease& release,
                                        const std::vector<GitHubAsset>& assets,
                                        const std::vector<store::PublicationRow>& rows) {
  if (deps_.attestor == nullptr) return Status::Ok();
  std::vector<std::pair<std::string, std::string>> wheels;
  for (const auto& r : rows) {
    if (r.target == "github" && r.kind == "asset" && r.repo == repo && !r.sha256.empty()) {
      wheels.emplace_back(SanitizeAssetName(r.filename), r.sha256);
    }
  }
  for (const auto& a : assets) {  // earlier builds' wheels on the same release
    bool listed =
        std::any_of(wheels.begin(), wheels.end(), [&](const auto& w) { return w.first == a.name; });
    if (!listed && a.name.ends_with(".whl") && a.digest.starts_with("sha256:")) {
      wheels.emplace_back(a.name, a.digest.substr(7));
    }
  }
  std::string sums = ChecksumsText(std::move(wheels));
  FARM_ASSIGN_OR_RETURN(auto signature, deps_.attestor->SignBytes(sums));
  std::string stem = Sha256Hex(sums);
  FARM_ASSIGN_OR_RETURN(std::string sums_path, ScratchFile(stem + ".sums", sums));
  FARM_ASSIGN_OR_RETURN(std::string sig_path, ScratchFile(stem + ".sig", signature.second));
  Status uploaded = deps_.github
                        ->UploadAsset(repo, release,
                                      {.local_path = sums_path,
                                       .name = kSums,
                                       .content_type = "text/plain",
                                       .sha256_hex = stem,
                                       .replace = true})
                        .status();
  if (uploaded.ok()) {
    uploaded = deps_.github
                   ->UploadAsset(repo, release,
                                 {.local_path = sig_path,
                                  .name = kSumsSig,
                                  .content_type = "application/octet-stream",
                                  .sha256_hex = Sha256Hex(signature.second),
                                  .replace = true})
                   .status();
  }
  std::filesystem::remove(sums_path);
  std::filesystem::remove(sig_path);
  return uploaded;
}

Status Publisher::UploadHfProvenance(const store::PublicationRow& row) {
  if (deps_.attestor == nullptr) return Status::Ok();
  const std::string revision = row.ref.empty() ? "main" : row.ref;
  FARM_ASSIGN_OR_RETURN(std::string lines, ProvenanceLines(row));
  if (lines.empty()) {
    log::Warn(row.filename + " has no signed provenance (stored before farmd kept it)");
  } else {
    FARM_ASSIGN_OR_RETURN(std::string path, ScratchFile(row.sha256 + ".intoto.jsonl", lines));
    auto uploaded = deps_.hf->UploadFile({.repo_id = row.repo,
                                          .revision = revision,
                                          .local_path = path,
                                          .path_in_repo = row.path + ".intoto.jsonl",
                                          .sha256_hex = Sha256Hex(lines),
                                          .summary = "Provenance of " + row.filename,
                                          .replace = true});
    std::filesystem::remove(path);
    FARM_RETURN_IF_ERROR(uploaded.status());
  }
  // SHA256SUMS of the folder: every wheel farmd put there, this one included.
  const std::string dir = HubDirOf(row.path);
  FARM_ASSIGN_OR_RETURN(auto files, deps_.store->ListHubFilesUnder(row.repo, row.ref, dir));
  std::vector<std::pair<std::string, std::string>> wheels{
      {row.path.substr(dir.size()), row.sha256}};
  for (const auto& f : files) {
    std::string name = f.path.substr(dir.size());
    if (name.find('/') == std::string::npos && !f.sha256.empty())
      wheels.emplace_back(name, f.sha256);
  }
  std::string sums = ChecksumsText(std::move(wheels));
  FARM_ASSIGN_OR_RETURN(auto signature, deps_.attestor->SignBytes(sums));
  std::string stem = Sha256Hex(sums);
  FARM_ASSIGN_OR_RETURN(std::string sums_path, ScratchFile(stem + ".sums", sums));
  FARM_ASSIGN_OR_RETURN(std::string sig_path, ScratchFile(stem + ".sig", signature.second));
  Status uploaded = Status::Ok();
  for (const auto& [local, name, sha] :
       {std::tuple{sums_path, std::string(kSums), stem},
        std::tuple{sig_path, std::string(kSumsSig), Sha256Hex(signature.second)}}) {
    if (!uploaded.ok()) break;
    uploaded = deps_.hf
                   ->UploadFile({.repo_id = row.repo,
                                 .revision = revision,
                                 .local_path = local,
                                 .path_in_repo = dir + name,
                                 .sha256_hex = sha,
                                 .summary = "Checksums of " + (dir.empty() ? "/" : dir),
                                 .replace = true})
                   .status();
  }
  std::filesystem::remove(sums_path);
  std::filesystem::remove(sig_path);
  return uploaded;
}

}  // namespace farm::publish
