// Source archives as builds name them (docs/recipes.md, "Sources"): a build or schedule
// names an uploaded archive by its sha256, never a path on the client; archives nothing
// needs any more are collected. Thread-safe: the store port and the blob store are.
#ifndef FARM_DAEMON_BUILDS_SOURCES_H_
#define FARM_DAEMON_BUILDS_SOURCES_H_

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/ports/source_archive_store.h"
#include "farm/v1/types.pb.h"

namespace farm::builds {

struct SourceDeps {
  store::SourceArchiveStore* sources = nullptr;
  store::BlobStore* blobs = nullptr;
  const Clock* clock = nullptr;
};

// InvalidArgument unless `sha256` is 64 lowercase hex digits (how archives are named).
Status CheckSourceSha(const std::string& sha256);

// The stored record of the archive `sha256` whose bytes are there too; NotFound when
// either is missing.
Result<store::SourceArchiveRow> StoredSource(const SourceDeps& deps, const std::string& sha256);

// The uploaded archive `source` names, checked: a source that is still a path on the
// client is refused (InvalidArgument), an archive must have been uploaded and checked
// (FailedPrecondition otherwise) and gets its size and origin filled in and its last use
// recorded. Returns its sha256, "" for a git source.
Result<std::string> CheckBuildSource(const SourceDeps& deps, farm::v1::Source* source);

// Removes source archives unused for `retention_ms` (0: none) that no schedule and no
// queued or running build names. Returns how many went.
Result<int> CollectSources(const SourceDeps& deps, int64_t retention_ms);

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_SOURCES_H_
