// ExecutorProcessRunner: a ProcessRunner whose every process runs through an Executor, so
// code written against ProcessRunner (StepRunner, ValidateWheels) runs in the job's builder
// container when the worker uses the container executor. Each Start() is one `ENGINE run`
// with the fixed parts of `base` (workspace, image, mounts, and variables such as
// FARM_JOB_ID that name and label the container) and the spec's argv, working directory
// (inside the workspace), environment (over base's) and kill grace. Thread-safe as its
// Executor is; the Executor must outlive it.
#ifndef FARM_WORKER_AGENT_EXECUTOR_RUNNER_H_
#define FARM_WORKER_AGENT_EXECUTOR_RUNNER_H_

#include <memory>
#include <utility>

#include "common/process.h"
#include "common/status.h"
#include "worker/agent/executor.h"

namespace farm::agent {

class ExecutorProcessRunner final : public ProcessRunner {
 public:
  ExecutorProcessRunner(Executor& executor, ExecRequest base)
      : executor_(executor), base_(std::move(base)) {}

  // On success the started process (the engine client for a container). InvalidArgument
  // for what a container cannot honour: standard input, or an environment that is not
  // complete (clear_env false: the worker's own variables must not leak in).
  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override;

 private:
  Executor& executor_;
  const ExecRequest base_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_AGENT_EXECUTOR_RUNNER_H_
