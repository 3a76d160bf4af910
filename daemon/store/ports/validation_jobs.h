// ValidationJobs: validation jobs (kJobValidate) that run a build's wheels on other
// hardware, and the validation state of stored artifacts.
#ifndef FARM_DAEMON_STORE_PORTS_VALIDATION_JOBS_H_
#define FARM_DAEMON_STORE_PORTS_VALIDATION_JOBS_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

class ValidationJobs {
 public:
  virtual ~ValidationJobs() = default;

  // Queues `job` (kind kJobValidate, with its build, target, cell and needs) in its build
  // without changing the build's state, unless a validation job of the same target attempt
  // and cell is pending or running: then that one is returned and nothing is stored. On
  // success returns the job as stored.
  virtual Result<JobRow> QueueValidationJob(const JobRow& job) = 0;
  // The validation jobs of one target attempt, oldest first.
  virtual Result<std::vector<JobRow>> ListValidationJobs(int64_t target_job_id,
                                                         int target_attempt) = 0;
  // Artifacts whose validation_state is `state`, id > after_id ascending, at most `limit`.
  virtual Result<std::vector<ArtifactRow>> ListArtifactsInValidationState(int state,
                                                                          int64_t after_id,
                                                                          int limit) = 0;
  // Records the state of an artifact's stored report (for rows stored before the column).
  virtual Status SetArtifactValidationState(int64_t artifact_id, int state) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_VALIDATION_JOBS_H_
