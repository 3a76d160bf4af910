// NewTorchProofs: stable-ABI wheels proven with a torch released after their build
// (daemon/builds/new_torch.h). Each proof is a validation job keyed by its target build
// job and cell (migration 028): the key and the job are written in one transaction, so
// queueing the same proof again, after any crash, stores nothing.
#ifndef FARM_DAEMON_STORE_PORTS_NEW_TORCH_PROOFS_H_
#define FARM_DAEMON_STORE_PORTS_NEW_TORCH_PROOFS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

// A wheel that failed its proof with a new torch: the index keeps it out of that torch.
struct RefusedTorch {
  std::string sha256;  // the wheel's bytes (every copy of them is refused)
  std::string torch;   // the release, "2.12.0"
  std::string reason;  // the validation job's error
  int64_t job_id = 0;  // the validation job
};

struct QueuedProof {
  JobRow job;           // as stored: this call's, or the one queued before under the key
  bool queued = false;  // this call stored it
};

class NewTorchProofs {
 public:
  virtual ~NewTorchProofs() = default;

  // Stores validation job `job` (kind kJobValidate, its target set) under the key
  // (job.target_job_id, `cell_key`) unless that key exists. InvalidArgument for a job that
  // is not a validation job.
  virtual Result<QueuedProof> QueueNewTorchProof(const JobRow& job, const std::string& cell_key,
                                                 const std::string& torch) = 0;
  // The failed proofs, oldest first, at most `limit`, one row per wheel and torch.
  virtual Result<std::vector<RefusedTorch>> ListRefusedTorches(int limit) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_NEW_TORCH_PROOFS_H_
