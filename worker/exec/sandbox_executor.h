// SandboxExecutor: the native executor with the build inside the farm's bubblewrap sandbox
// (common/sandbox/sandbox.h), so a recipe's commands (build and validation) cannot reach
// what is not theirs: the system read-only, the job's workspace read-write (also at
// /farm/job), its environment read-only, the recipe's compile-cache namespace, no network
// unless the recipe asks (validation never), the build user under a root worker, and the
// GPUs passed in.
// Thread-safe: Start() only reads the options.
#ifndef FARM_WORKER_EXEC_SANDBOX_EXECUTOR_H_
#define FARM_WORKER_EXEC_SANDBOX_EXECUTOR_H_

#include <memory>
#include <string>

#include "common/process.h"
#include "common/sandbox/sandbox.h"
#include "common/status.h"
#include "worker/exec/executor.h"

namespace farm::agent {

// The sandbox's request for an executor's `request`.
sandbox::Request ToSandboxRequest(const ExecRequest& request);

class SandboxExecutor final : public Executor {
 public:
  SandboxExecutor(ProcessRunner& runner, sandbox::Options options)
      : runner_(runner), options_(std::move(options)) {}
  std::string Name() const override { return "sandbox"; }
  // Validation steps go through Start() too, so the recipe's script is sandboxed.
  bool RunsOnHost() const override { return false; }
  Result<std::unique_ptr<Process>> Start(const ExecRequest& request) override;

 private:
  ProcessRunner& runner_;
  const sandbox::Options options_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_SANDBOX_EXECUTOR_H_
