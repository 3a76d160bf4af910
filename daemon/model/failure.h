// Why a job failed, as both the gRPC API (farmctl show) and the dashboard tell it: the
// phase its counted attempt failed in, a one-line summary, and the few lines that say why
// (the failed validation cases with their numbers, then the meaningful lines of the end of
// its log, job_log.h).
#ifndef FARM_DAEMON_MODEL_FAILURE_H_
#define FARM_DAEMON_MODEL_FAILURE_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::model {

struct JobFailure {
  std::string phase;    // FailurePhase of the counted attempt; "" without one
  std::string summary;  // the attempt's detail, else the job's error
  std::vector<std::string> lines;
};

// The attempt of `attempts` that counts for `job` (its current attempt), or null.
const store::AttemptRow* CountedAttempt(const store::JobRow& job,
                                        const std::vector<store::AttemptRow>& attempts);

// The failure of `job`. With `with_lines` it reads the stored validation reports and the
// end of the counted attempt's log (at most 12 lines come back); without, no log is read
// (lists of many jobs).
Result<JobFailure> ExplainFailure(store::Store& store, const store::JobRow& job,
                                  const std::vector<store::AttemptRow>& attempts,
                                  const farm::v1::Recipe& recipe, bool with_lines);

// One line per failed case of `report`: "case causal-bf16 failed: cosine 0.9312 (min
// 0.99), relative L1 0.1803 (max 0.07), 512.0 TOPS".
std::vector<std::string> FailedCaseLines(const farm::v1::ValidationReport& report,
                                         const farm::v1::ValidationSpec& spec);

}  // namespace farm::model

#endif  // FARM_DAEMON_MODEL_FAILURE_H_
