// What the publisher publishes: outbox rows from a recipe, labelled wheels, release gating
// and release notes.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/inspect.h"
#include "common/wheel/relabel.h"
#include "daemon/publish/outbox.h"
#include "daemon/publish/outbox_internal.h"
#include "daemon/publish/release_notes.h"

namespace farm::publish {
namespace {

namespace stdfs = std::filesystem;

void ReplaceAll(std::string* text, const std::string& key, const std::string& value) {
  for (size_t pos = text->find(key); pos != std::string::npos;
       pos = text->find(key, pos + value.size())) {
    text->replace(pos, key.size(), value);
  }
}

Status StoreBlob(store::BlobStore& blobs, const std::string& path, const std::string& sha256,
                 int64_t size) {
  if (blobs.Contains(sha256)) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto writer, blobs.BeginWrite(size, sha256));
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound("cannot open " + path);
  std::string buf(1 << 20, '\0');
  Status appended;
  for (size_t n; appended.ok() && (n = fread(buf.data(), 1, buf.size(), f)) > 0;) {
    appended = writer->Append(std::string_view(buf.data(), n));
  }
  fclose(f);
  FARM_RETURN_IF_ERROR(appended);
  return writer->Commit();
}

std::string Fixed(double v, int digits) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Accuracy and speed of the validation cases: the worst cosine and relative L1, the best
// TOPS.
void AddValidation(const farm::v1::ValidationReport& report, WheelNotesRow* row) {
  if (report.state() == farm::v1::VALIDATION_PASSED && !report.gpu_name().empty()) {
    row->gpus_validated.push_back(report.gpu_name());
  }
  if (report.cases().empty()) {
    if (report.state() == farm::v1::VALIDATION_PENDING_HARDWARE ||
        report.state() == farm::v1::VALIDATION_STATE_UNSPECIFIED) {
      row->accuracy = "pending hardware";
    }
    return;
  }
  double cosine = 1, rel_l1 = 0, tops = 0;
  for (const auto& c : report.cases()) {
    cosine = std::min(cosine, c.cosine());
    rel_l1 = std::max(rel_l1, c.relative_l1());
    tops = std::max(tops, c.tops());
  }
  row->accuracy = "cos " + Fixed(cosine, 4) + ", rel-L1 " + Fixed(rel_l1, 3);
  if (tops > 0) row->tops = Fixed(tops, 0);
}

// SASS archs of a wheel: from the stored manifest, else read from the published bytes.
std::vector<std::string> SassArchs(store::BlobStore& blobs, const std::string& manifest_blob,
                                   const std::string& sha256) {
  std::set<std::string> archs;
  farm::v1::ArchManifest manifest;
  if (manifest.ParseFromString(manifest_blob)) {
    for (const auto& image : manifest.images()) {
      if (image.kind() == "sass") archs.insert(image.arch());
    }
  }
  if (archs.empty()) {
    auto path = blobs.LocalPath(sha256);
    Result<wheel::WheelReport> report =
        path.ok() ? wheel::InspectWheel(*path, {}) : Result<wheel::WheelReport>(path.status());
    if (report.ok()) {
      for (const auto& module : report->manifest.modules) {
        for (const auto& name : module.archs) {
          if (name.rfind("sm_", 0) == 0) archs.insert(name);
        }
      }
    }
  }
  return {archs.begin(), archs.end()};
}

constexpr int kBuildPage = 200;
constexpr int kMaxBuildPages = 25;   // the 5,000 newest builds
constexpr int kMaxBuildsRead = 200;  // of the recipe, whose rows are read

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A complete wheel on a release; a staged replacement ("farm-tmp-…") is not one yet.
bool IsWheelAsset(const GitHubAsset& a) {
  return a.state == "uploaded" && EndsWith(a.name, ".whl") && a.name.rfind("farm-tmp-", 0) != 0;
}

std::string DigestHex(const GitHubAsset& a) {
  return a.digest.rfind("sha256:", 0) == 0 ? a.digest.substr(7) : "";
}

std::string DirOf(const std::string& url) {
  size_t slash = url.rfind('/');
  return slash == std::string::npos ? "" : url.substr(0, slash);
}

bool IsPublishedAssetAt(const store::PublicationRow& r, const std::string& repo,
                        const std::string& ref) {
  return r.target == "github" && r.kind == "asset" && r.repo == repo && r.ref == ref &&
         store::IsDelivered(r.state) && !r.sha256.empty();
}

// The row `a` was uploaded from: same (sanitized) name, and same bytes when GitHub says.
const store::PublicationRow* MatchRow(const GitHubAsset& a,
                                      const std::vector<const store::PublicationRow*>& rows) {
  for (const auto* r : rows) {
    if (SanitizeAssetName(r->filename) != a.name) continue;
    if (DigestHex(a).empty() || DigestHex(a) == r->sha256) return r;
  }
  return nullptr;
}

// A table row from what the store knows of a wheel it published.
// The wheels the job that built it consumed (recipe `requires:`), with sha256 and use. A
// store without build graphs has none.
Result<std::vector<std::string>> ConsumedWheels(store::Store& store, const store::JobRow& job) {
  int64_t builder = job.reused_from > 0 ? job.reused_from : job.id;
  auto requirements = store.ListRequirements(builder);
  if (requirements.status().code() == StatusCode::kUnimplemented) return std::vector<std::string>{};
  FARM_RETURN_IF_ERROR(requirements.status());
  FARM_ASSIGN_OR_RETURN(auto inputs, store.ListJobInputs(builder));
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    std::string use;
    for (const auto& r : *requirements) {
      if (r.required_job_id != in.required_job_id) continue;
      use = r.for_build && r.for_validation ? "build and validation"
            : r.for_build                   ? "build"
                                            : "validation";
    }
    out.push_back(in.artifact.filename + " sha256 " + in.artifact.sha256 + " (" + use + ")");
  }
  return out;
}

Result<WheelNotesRow> StoredWheelRow(store::Store& store, store::BlobStore& blobs,
                                     const store::PublicationRow& r) {
  FARM_ASSIGN_OR_RETURN(auto artifact, store.GetArtifact(r.artifact_id));
  FARM_ASSIGN_OR_RETURN(auto job, store.GetJob(artifact.job_id));
  farm::v1::MatrixCell cell;
  (void)cell.ParseFromString(job.cell);
  farm::v1::ValidationReport report;
  (void)report.ParseFromString(artifact.validation);
  WheelNotesRow row{.wheel = r.filename,
                    .python = cell.python(),
                    .torch = cell.torch(),
                    .cuda = cell.cuda(),
                    .sha256 = r.sha256};
  row.sass_archs = SassArchs(blobs, artifact.manifest, r.sha256);
  AddValidation(report, &row);
  FARM_ASSIGN_OR_RETURN(row.consumed, ConsumedWheels(store, job));
  return row;
}

std::string Summary(const std::string& recipe_name, const std::set<int64_t>& builds, int bare) {
  std::string ids;
  for (int64_t id : builds) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  std::string text = "Built by the wheel farm from recipe `" + recipe_name + "` (build" +
                     (builds.size() > 1 ? "s " : " ") + (ids.empty() ? "?" : ids) + ").";
  if (bare > 0) {
    text +=
        " Wheels listed with only a name and sha256 are on the release without a record "
        "in the farm.";
  }
  return text;
}

}  // namespace

std::string RenderTag(const std::string& tag_template, const farm::v1::Recipe& recipe,
                      int64_t build_id) {
  std::string tag = tag_template.empty() ? "v{version}-build{build_id}" : tag_template;
  ReplaceAll(&tag, "{name}", recipe.name());
  ReplaceAll(&tag, "{version}", recipe.version().empty() ? "0" : recipe.version());
  ReplaceAll(&tag, "{build_id}", std::to_string(build_id));
  return tag;
}

std::string HfVariant(const farm::v1::MatrixCell& cell) {
  if (!cell.torch().empty()) return HfKernelVariant(cell.torch(), cell.cuda(), cell.platform());
  std::string arch = cell.platform();
  if (arch.rfind("linux_", 0) == 0) arch = arch.substr(6);
  return "cu" + wheel::NoDot(cell.cuda()) + "-" + arch + "-linux";
}

std::vector<store::PublicationRow> PlanRows(const farm::v1::Recipe& recipe, int64_t build_id,
                                            int64_t artifact_id, const farm::v1::MatrixCell& cell,
                                            const std::string& arch) {
  const auto& spec = recipe.publish();
  std::vector<store::PublicationRow> rows;
  if (!spec.github_repo().empty()) {
    store::PublicationRow asset;
    asset.build_id = build_id;
    asset.artifact_id = artifact_id;
    asset.target = "github";
    asset.kind = "asset";
    asset.repo = spec.github_repo();
    asset.ref = RenderTag(spec.github_tag_template(), recipe, build_id);
    asset.replace_remote = spec.replace_assets();
    store::PublicationRow release = asset;
    release.artifact_id = 0;
    release.kind = "release";
    release.replace_remote = false;
    rows.push_back(asset);
    rows.push_back(release);
  }
  if (!spec.hf_repo().empty()) {
    store::PublicationRow file;
    file.build_id = build_id;
    file.artifact_id = artifact_id;
    file.target = "hf";
    file.kind = "file";
    file.repo = spec.hf_repo();
    file.ref = "main";
    std::string path_template =
        spec.hf_path_template().empty() ? "build/{variant}/{wheel}" : spec.hf_path_template();
    ReplaceAll(&path_template, "{variant}", HfVariant(cell));
    ReplaceAll(&path_template, "{arch}", arch.empty() ? "noarch" : arch);
    ReplaceAll(&path_template, "{build}", std::to_string(build_id));
    ReplaceAll(&path_template, "{build_id}", std::to_string(build_id));
    file.path = path_template;
    file.replace_remote = spec.replace_assets();
    rows.push_back(file);
  }
  return rows;
}

ReleaseSpec ReleaseSpecFor(const farm::v1::Recipe& recipe, const store::PublicationRow& row) {
  ReleaseSpec spec;
  spec.repo = row.repo;
  spec.tag = row.ref;
  spec.name =
      recipe.name() + " " + recipe.version() + " (build " + std::to_string(row.build_id) + ")";
  return spec;
}

Status NoToken(const std::string& key) {
  // farmd reads its secrets once, at start: a fixed file does nothing until it restarts.
  return Status::FailedPrecondition(
      "farmd has no " + key + " (give it in --secrets-file or FARM_" + key +
      ", then restart farmd, which reads them only at start; `farmctl publish BUILD --to "
      "all` then publishes again)");
}

Result<PreparedWheel> LabelWheel(store::BlobStore& blobs, const std::string& work_dir,
                                 const store::ArtifactRow& artifact, const std::string& label) {
  const std::string dir = work_dir + "/artifact-" + std::to_string(artifact.id);
  FARM_RETURN_IF_ERROR(fs::RemoveAll(dir));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir, 0700));
  // RelabelWheel reads the wheel's tags from its file name, which the blob path lacks.
  std::error_code ec;
  const std::string named = dir + "/" + artifact.filename;
  FARM_ASSIGN_OR_RETURN(std::string blob, blobs.LocalPath(artifact.sha256));
  stdfs::create_symlink(blob, named, ec);
  if (ec) return Status::Internal("linking " + named + ": " + ec.message());
  auto result = [&]() -> Result<PreparedWheel> {
    FARM_ASSIGN_OR_RETURN(wheel::RelabelResult r, wheel::RelabelWheel(named, label, dir));
    if (!r.rewritten) return PreparedWheel{artifact.filename, artifact.sha256, artifact.size};
    wheel::InspectOptions options;
    options.build_manifest = false;
    FARM_ASSIGN_OR_RETURN(wheel::WheelReport report, wheel::InspectWheel(r.path, options));
    if (!report.ok()) {
      return Status::Internal("relabelled " + r.filename +
                              " fails the wheel checks: " + report.problems.front().ToString());
    }
    PreparedWheel out{r.filename, "", 0};
    FARM_ASSIGN_OR_RETURN(out.sha256, Sha256FileHex(r.path, &out.size));
    FARM_RETURN_IF_ERROR(StoreBlob(blobs, r.path, out.sha256, out.size));
    return out;
  }();
  (void)fs::RemoveAll(dir);
  return result;
}

std::string ReleaseWaitReason(int build_state, const std::vector<store::PublicationRow>& rows,
                              bool wheels_waiting_for_validation) {
  if (build_state == store::kBuildQueued || build_state == store::kBuildRunning) {
    return "waiting for the build to finish";
  }
  if (wheels_waiting_for_validation) return "waiting for wheels to pass validation";
  int pending = 0, failed = 0;
  for (const auto& r : rows) {
    // A wheel too large for GitHub never goes up: the release goes out without it.
    if (r.target != "github" || r.kind != "asset" || r.state == store::PublicationState::kRefused) {
      continue;
    }
    if (r.state == store::PublicationState::kFailed) ++failed;
    if (!store::IsDelivered(r.state)) ++pending;
  }
  if (failed > 0) return "waiting: " + std::to_string(failed) + " asset(s) failed";
  if (pending > 0) return "waiting for " + std::to_string(pending) + " asset(s)";
  return "";
}

Result<std::vector<store::PublicationRow>> EarlierAssetRows(
    store::Store& store, const std::string& recipe_name, const store::PublicationRow& release,
    const std::vector<GitHubAsset>& assets) {
  std::map<std::string, std::string> unknown;  // wheel name -> digest hex ("" when none)
  for (const auto& a : assets) {
    if (IsWheelAsset(a)) unknown[a.name] = DigestHex(a);
  }
  FARM_ASSIGN_OR_RETURN(auto own, store.ListPublications(release.build_id));
  for (const auto& r : own) unknown.erase(SanitizeAssetName(r.filename));
  std::vector<store::PublicationRow> out;
  int64_t before = 0;
  int builds_read = 0;
  for (int page = 0; page < kMaxBuildPages && !unknown.empty(); ++page) {
    FARM_ASSIGN_OR_RETURN(auto builds, store.ListBuilds(before, kBuildPage));
    for (const auto& b : builds) {
      before = b.id;
      if (b.id == release.build_id || b.recipe_name != recipe_name) continue;
      if (++builds_read > kMaxBuildsRead || unknown.empty()) return out;
      FARM_ASSIGN_OR_RETURN(auto rows, store.ListPublications(b.id));
      for (const auto& r : rows) {
        if (!IsPublishedAssetAt(r, release.repo, release.ref)) continue;
        auto it = unknown.find(SanitizeAssetName(r.filename));
        if (it == unknown.end() || (!it->second.empty() && it->second != r.sha256)) continue;
        out.push_back(r);
        unknown.erase(it);
      }
    }
    if (static_cast<int>(builds.size()) < kBuildPage) break;
  }
  return out;
}

Result<std::string> RenderBuildNotes(store::Store& store, store::BlobStore& blobs,
                                     const farm::v1::Recipe& recipe,
                                     const std::vector<store::PublicationRow>& rows,
                                     const std::vector<GitHubAsset>& assets,
                                     const std::vector<store::PublicationRow>& earlier,
                                     const std::string& find_links_url) {
  std::vector<const store::PublicationRow*> own, prior;
  for (const auto& r : rows) {
    if (r.target == "github" && r.kind == "asset") own.push_back(&r);
  }
  for (const auto& r : earlier) prior.push_back(&r);
  ReleaseNotesInput input;
  input.find_links_url = find_links_url;
  input.package = recipe.name();
  if (!own.empty()) {
    input.package = own.front()->filename.substr(0, own.front()->filename.find('-'));
    input.version = wheel::WithLocalLabel(recipe.version(), own.front()->label);
  }
  std::set<int64_t> builds;
  std::set<const store::PublicationRow*> listed;
  auto add = [&](const store::PublicationRow* r) -> Status {
    FARM_ASSIGN_OR_RETURN(WheelNotesRow row, StoredWheelRow(store, blobs, *r));
    input.wheels.push_back(std::move(row));
    builds.insert(r->build_id);
    listed.insert(r);
    return Status::Ok();
  };
  int bare = 0;
  for (const auto& a : assets) {
    if (!IsWheelAsset(a)) continue;
    const store::PublicationRow* r = MatchRow(a, own);
    if (r == nullptr) r = MatchRow(a, prior);
    if (r != nullptr) {
      FARM_RETURN_IF_ERROR(add(r));
    } else {
      input.wheels.push_back({.wheel = a.name, .sha256 = DigestHex(a)});  // no record of it
      ++bare;
    }
    if (input.download_base_url.empty()) input.download_base_url = DirOf(a.browser_download_url);
  }
  for (const auto* r : own) {  // a listing that lacks an uploaded row still shows it
    if (listed.count(r) == 0) FARM_RETURN_IF_ERROR(add(r));
    if (input.download_base_url.empty()) input.download_base_url = DirOf(r->remote_url);
  }
  if (builds.empty() && !rows.empty()) builds.insert(rows.front().build_id);
  input.summary = Summary(recipe.name(), builds, bare);
  return RenderReleaseNotes(input);
}

Result<std::string> Publisher::NotesFor(const farm::v1::Recipe& recipe,
                                        const store::PublicationRow& release,
                                        const std::vector<store::PublicationRow>& rows,
                                        const std::vector<GitHubAsset>& assets) {
  FARM_ASSIGN_OR_RETURN(auto earlier,
                        EarlierAssetRows(*deps_.store, recipe.name(), release, assets));
  return RenderBuildNotes(*deps_.store, *deps_.blobs, recipe, rows, assets, earlier,
                          options_.find_links_url);
}

}  // namespace farm::publish
