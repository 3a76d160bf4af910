// Executor: where a job's commands run. NativeExecutor runs them directly on the host (in
// its own process group, with exactly the environment given); ContainerExecutor wraps each
// in a container run of the job's builder image. The build command and, through
// ExecutorProcessRunner (executor_runner.h), the validation steps go through the job's
// executor. Executors are thread-safe: several jobs start commands at once.
#ifndef FARM_WORKER_EXEC_EXECUTOR_H_
#define FARM_WORKER_EXEC_EXECUTOR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"

namespace farm::agent {

// A process's environment: variable name to value.
using EnvMap = std::map<std::string, std::string>;

// This process's own environment.
EnvMap CurrentEnv();

// A host directory a container executor mounts at the same path inside the container.
struct ExecMount {
  std::string path;
  bool read_only = true;
};

struct ExecRequest {
  std::vector<std::string> argv;
  std::string cwd;                // inside `workspace`
  EnvMap env;                     // the complete environment
  std::string workspace;          // the job's workspace (to mount in a container)
  std::string image;              // builder image; ignored by NativeExecutor
  int64_t kill_grace_ms = 5000;   // SIGTERM -> SIGKILL on timeout
  std::vector<ExecMount> mounts;  // besides the workspace; NativeExecutor ignores them
  // Never the network, whatever the operator allows for builds: validation installs with
  // --no-index from local wheels only. NativeExecutor ignores it (the host's network).
  bool offline = false;
  // The command may use the network (a recipe with `network: true`); sandboxes and
  // containers cut it otherwise. `offline` wins.
  bool network = false;
  // Host directories a sandbox on the host must make readable besides the system (the
  // build's interpreter prefix, the CUDA toolkit); containers bring their own and ignore it.
  std::vector<std::string> host_read_paths;
  // Paths under `workspace` that the command must not change (the job's environment,
  // whose files are links to a snapshot shared by every job of its cell): sandboxes and
  // containers mount them read-only. NativeExecutor ignores it.
  std::vector<std::string> read_only_in_workspace;
};

// What runs a build: directly on the host, in a bubblewrap sandbox on the host as the
// build user, or in a container (podman or docker). The rules that differ by where a
// build runs (paths the build sees, who owns the workspace, whose processes the worker
// can sample) read the kind; the name is for what people read.
enum class ExecutorKind { kNative, kSandbox, kContainer };

class Executor {
 public:
  virtual ~Executor() = default;
  // "native", "podman", ... for logs.
  virtual std::string Name() const = 0;
  virtual ExecutorKind Kind() const = 0;
  // Starts the command. On success the caller Wait()s on the process (and may Kill() it);
  // on failure returns why it could not start.
  virtual Result<std::unique_ptr<Process>> Start(const ExecRequest& request) = 0;
  // True when Start() runs commands directly on the host, where the job's helper tools
  // run: validation then keeps using the helper tools' runner. False (containers): each
  // validation step is started through this executor.
  virtual bool RunsOnHost() const { return false; }
};

class NativeExecutor final : public Executor {
 public:
  explicit NativeExecutor(ProcessRunner& runner) : runner_(runner) {}
  std::string Name() const override { return "native"; }
  ExecutorKind Kind() const override { return ExecutorKind::kNative; }
  bool RunsOnHost() const override { return true; }
  Result<std::unique_ptr<Process>> Start(const ExecRequest& request) override {
    ProcessSpec spec;
    spec.argv = request.argv;
    spec.cwd = request.cwd;
    spec.env = request.env;
    spec.clear_env = true;
    spec.kill_grace_ms = request.kill_grace_ms;
    return runner_.Start(spec);
  }

 private:
  ProcessRunner& runner_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_EXECUTOR_H_
