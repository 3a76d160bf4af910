// ExecutorProcessRunner: a ProcessRunner whose every process runs through an Executor, so
// code written against ProcessRunner (StepRunner, ValidateWheels) runs in the job's builder
// container when the worker uses the container executor. Each Start() is one `ENGINE run`
// with the fixed parts of `base` (workspace, image, mounts, and variables such as
// FARM_JOB_ID that name and label the container) and the spec's argv, working directory
// (inside the workspace), environment (over base's) and kill grace. Thread-safe as its
// Executor is; the Executor must outlive it.
#ifndef FARM_WORKER_EXEC_EXECUTOR_RUNNER_H_
#define FARM_WORKER_EXEC_EXECUTOR_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/process.h"
#include "common/status.h"
#include "worker/exec/executor.h"

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

// A runner that hands every spec to `host` unchanged; `host` must outlive it.
std::unique_ptr<ProcessRunner> ForwardTo(ProcessRunner& host);

// The runner for the steps that prove a job's wheels (clean venv, install, imports,
// validation script). When `executor` runs on the host (native), `host` itself, unwrapped,
// so validation runs exactly as the helper tools do. Otherwise an ExecutorProcessRunner
// over `executor` with `base` (the workspace, image and mounts of the job's validation)
// made offline: each step is one container of the job's image, with the GPUs passed as
// for the build and never the network. `executor` and `host` must outlive the result.
std::unique_ptr<ProcessRunner> MakeValidationRunner(Executor& executor, ProcessRunner& host,
                                                    ExecRequest base);

// Whether `path` is an executable file where `executor` runs `base`'s commands (for a
// container: in the job's image), by running `test -x PATH` there, offline and for at
// most `timeout_ms`. On success true or false; an error when the check itself could not
// run (the engine failed, the image is missing, it timed out).
Result<bool> HasExecutable(Executor& executor, ExecRequest base, const std::string& path,
                           int64_t timeout_ms = 30000);

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_EXECUTOR_RUNNER_H_
