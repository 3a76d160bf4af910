#include "daemon/builds/sources.h"

#include "common/log.h"
#include "common/recipe/recipe.h"
#include "daemon/model/convert.h"

namespace farm::builds {

Status CheckSourceSha(const std::string& sha256) {
  bool hex = sha256.size() == 64;
  for (char c : sha256) hex &= (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  if (hex) return Status::Ok();
  return Status::InvalidArgument(
      "a source archive is named by its sha256, 64 lowercase hex "
      "digits; got \"" +
      sha256.substr(0, 80) + "\"");
}

Result<store::SourceArchiveRow> StoredSource(const SourceDeps& deps, const std::string& sha) {
  auto row = deps.sources->GetSourceArchive(sha);
  if (!row.ok() && row.status().code() != StatusCode::kNotFound) return row.status();
  if (!row.ok() || !deps.blobs->Contains(sha)) {
    return Status::NotFound("source archive " + sha + " is not on farmd");
  }
  return row;
}

Result<std::string> CheckBuildSource(const SourceDeps& deps, farm::v1::Source* source) {
  FARM_RETURN_IF_ERROR(recipe::CheckSourceIsContent(*source));
  if (source->kind_case() != farm::v1::Source::kArchive) return std::string();
  const std::string sha = source->archive().sha256();
  FARM_RETURN_IF_ERROR(CheckSourceSha(sha));
  auto row = StoredSource(deps, sha);
  if (!row.ok() && row.status().code() == StatusCode::kNotFound) {
    return Status::FailedPrecondition(row.status().message() +
                                      ": upload it first (farmctl submit does)");
  }
  FARM_RETURN_IF_ERROR(row.status());
  FARM_RETURN_IF_ERROR(deps.sources->TouchSourceArchive(sha, deps.clock->NowUnixMs()));
  bool unwrap = source->archive().unwrap_single_directory();
  *source->mutable_archive() = model::SourceArchiveToProto(*row);
  source->mutable_archive()->set_unwrap_single_directory(unwrap);
  return sha;
}

Result<int> CollectSources(const SourceDeps& deps, int64_t retention_ms) {
  if (retention_ms <= 0) return 0;
  int64_t cutoff = deps.clock->NowUnixMs() - retention_ms;
  FARM_ASSIGN_OR_RETURN(auto rows, deps.sources->ListCollectableSources(cutoff, 100));
  int removed = 0;
  for (const store::SourceArchiveRow& row : rows) {
    FARM_ASSIGN_OR_RETURN(bool forgotten, deps.sources->ForgetSourceArchive(row.sha256, cutoff));
    if (!forgotten) continue;
    FARM_RETURN_IF_ERROR(deps.blobs->Remove(row.sha256));
    log::Info("removed source archive " + row.sha256 + " (" + row.origin + "), unused since " +
              FormatRfc3339(row.last_used_ms));
    ++removed;
  }
  return removed;
}

}  // namespace farm::builds
