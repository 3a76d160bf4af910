// For the job runner's parts (job_runner.cc, job_build.cc, job_provision.cc,
// validation_attempt.cc): how a job's attempt ends (whose fault a failure is), where the
// build runs in the source, and what a job's containers share. Thread-safe.
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

// What every container of a job shares: its workspace, the recipe's image, and the job's
// identity, from which a container executor names and labels the container.
ExecRequest JobContainerBase(const std::string& ws, const std::string& image, const EnvMap& env);

// For a job whose commands run in a container: checks a path in the recipe's image, in a
// throwaway container named and labelled after the job. Null for native jobs.
ExecutableCheck ImageCheckFor(Executor& executor, const std::string& ws, const std::string& image,
                              const EnvMap& env);

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_JOB_OUTCOME_H_
