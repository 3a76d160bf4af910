// JobRunner: one attempt of one job, from a fresh workspace to CompleteJob. It makes the
// workspace and the job's log shipper, runs the attempt its lease asks for (a build,
// build_attempt.h, or the validation of an earlier build's wheels, validation_attempt.h),
// reports how the attempt ended and removes the workspace. Run() is called on the job's
// own thread and never throws; other threads stop the job through its JobControl.
#ifndef FARM_WORKER_ATTEMPT_JOB_RUNNER_H_
#define FARM_WORKER_ATTEMPT_JOB_RUNNER_H_

#include <memory>
#include <string>

#include "farm/v1/worker.pb.h"
#include "worker/attempt/attempt_context.h"
#include "worker/job/job_control.h"
#include "worker/job/log_shipper.h"

namespace farm::agent {

class JobRunner {
 public:
  JobRunner(JobDeps deps, JobSettings settings, farm::v1::JobAssignment job,
            std::shared_ptr<JobControl> control);

  // Runs the attempt and reports it to farmd. Returns what was reported.
  Outcome Run();

 private:
  Outcome Execute(LogShipper& log, const std::string& ws);
  void Report(const Outcome& outcome, int64_t last_seq);

  AttemptContext ctx_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_ATTEMPT_JOB_RUNNER_H_
