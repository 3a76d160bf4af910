// ProvenanceStore: the signed provenance envelopes farmd issued about wheels
// (docs/provenance.md), and re-signing them under a new key.
#ifndef FARM_DAEMON_STORE_PORTS_PROVENANCE_STORE_H_
#define FARM_DAEMON_STORE_PORTS_PROVENANCE_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// One DSSE envelope farmd signed about the wheel with bytes `sha256` (docs/provenance.md):
// kind "build" or "validation", for the job and attempt that made it, signed by `keyid`.
struct ProvenanceRow {
  int64_t id = 0;
  std::string sha256;
  std::string kind;
  int64_t job_id = 0;
  int attempt = 0;
  std::string keyid;
  std::string envelope;  // one line of JSON
  int64_t created_ms = 0;
};

class ProvenanceStore {
 public:
  virtual ~ProvenanceStore() = default;

  // Stores a signed envelope; a row of the same (sha256, kind, job, attempt) is kept as it
  // is (a repeated upload or report signs nothing twice). Returns whether it was stored.
  virtual Result<bool> InsertProvenance(const ProvenanceRow& row) = 0;
  // The envelopes about the wheel `sha256`, builds first, then by id; at most `limit`.
  virtual Result<std::vector<ProvenanceRow>> ListProvenance(const std::string& sha256,
                                                            int limit) = 0;
  // Rows signed by `keyid`, id > after_id ascending, at most `limit` (re-signing).
  virtual Result<std::vector<ProvenanceRow>> ListProvenanceSignedBy(const std::string& keyid,
                                                                    int64_t after_id,
                                                                    int limit) = 0;
  // Replaces row `id`'s envelope and key (a re-signature of the same statement).
  virtual Status ResignProvenance(int64_t id, const std::string& keyid,
                                  const std::string& envelope) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_PROVENANCE_STORE_H_
