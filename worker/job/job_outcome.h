// How a job's attempt ends, for the job runner's parts (job_runner.cc, job_provision.cc,
// validation_attempt.cc): whose fault a failure is, and where the build runs in the
// source. Pure; thread-safe.
#ifndef FARM_WORKER_JOB_JOB_OUTCOME_H_
#define FARM_WORKER_JOB_JOB_OUTCOME_H_

#include <string>

#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "worker/job/job_runner.h"

namespace farm::agent {

// The worker's or the farm's trouble: retried (CAUSE_INFRASTRUCTURE).
Outcome Infra(const std::string& detail);

// A recipe that names what its source does not have fails once, as the build's failure.
Outcome RecipeError(const std::string& detail);

// The directory the build runs in: `src`, or the recipe's subdirectory of it, which must
// stay inside the source tree and exist. InvalidArgument (the recipe's error) saying what
// the tree holds otherwise.
Result<std::string> BuildDir(const std::string& src, const farm::v1::Recipe& recipe);

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_JOB_OUTCOME_H_
