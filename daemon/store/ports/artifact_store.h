// ArtifactStore: the wheels a job attempt uploaded (the rows; the bytes are blobs).
#ifndef FARM_DAEMON_STORE_PORTS_ARTIFACT_STORE_H_
#define FARM_DAEMON_STORE_PORTS_ARTIFACT_STORE_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;

  // Idempotent on (job, attempt, filename) when the sha256 matches; AlreadyExists otherwise.
  virtual Result<ArtifactRow> InsertArtifact(const ArtifactRow& artifact) = 0;
  virtual Result<std::vector<ArtifactRow>> ListArtifacts(int64_t job_id) = 0;
  virtual Result<ArtifactRow> GetArtifact(int64_t id) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_ARTIFACT_STORE_H_
