// SandboxExecutor: the native executor with the build inside a bubblewrap sandbox, so a
// recipe's commands (build and validation) cannot reach what is not theirs:
//   - the file system is the system directories read-only (/usr, /lib*, /bin, /sbin, /etc
//     without the farm's own configuration, /opt), the interpreter's prefix and the CUDA
//     toolkit read-only, the job's workspace read-write, the recipe's own compile-cache
//     namespace read-write and the compiler wrappers read-only; nothing else exists: not
//     the worker's state directory and token, not other jobs' workspaces, not farmd's data
//     directory, not $HOME;
//   - the workspace is also mounted at the fixed path /farm/job, and the command's working
//     directory, arguments and environment name it there: builds compile the same paths on
//     every worker, which makes wheels reproducible across workers (docs/reproducibility.md);
//   - no network unless the recipe asks for it (validation never);
//   - its own PID, IPC and UTS namespaces and session: every process the build leaves
//     behind dies with it; no capabilities;
//   - under a root worker, the command runs as the unprivileged build user (build_user.h):
//     bwrap keeps only the capabilities to enter the user's working directory and to
//     switch users, and setpriv drops to the user, its group alone, no capabilities at
//     all, before the command starts;
//   - the GPUs (/dev/nvidia*) are passed in, for validation and for builds that probe the
//     GPU.
// Thread-safe: Start() only reads the options.
#ifndef FARM_WORKER_EXEC_SANDBOX_EXECUTOR_H_
#define FARM_WORKER_EXEC_SANDBOX_EXECUTOR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"
#include "worker/exec/build_user.h"
#include "worker/exec/executor.h"

namespace farm::agent {

// The path every job's workspace also has inside the sandbox.
inline constexpr char kSandboxJobRoot[] = "/farm/job";

struct SandboxOptions {
  std::string bwrap = "bwrap";  // the bubblewrap binary
  std::vector<std::string> system_dirs = {"/usr",    "/lib", "/lib32", "/lib64",
                                          "/libx32", "/bin", "/sbin",  "/opt"};
  std::string etc = "/etc";             // bound read-only without `etc_hidden`
  std::vector<std::string> etc_hidden;  // entries of /etc masked (the farm's configuration)
  std::vector<std::string> devices;     // device nodes passed in (/dev/nvidia0, ...)
  BuildUser build_user;                 // who commands run as (a root worker switches)
  std::string setpriv = "setpriv";      // util-linux, inside the sandbox
};

// The bwrap command line for `request` (argv ends with "--" and the request's argv, with
// its workspace paths moved to kSandboxJobRoot). Pure; exposed for tests.
std::vector<std::string> SandboxCommand(const SandboxOptions& options, const ExecRequest& request);

// The command's environment: the request's, workspace paths moved to kSandboxJobRoot, and
// HOME=/tmp. bwrap passes it on; it never appears on a command line.
std::map<std::string, std::string> SandboxEnv(const ExecRequest& request);

// Rewrites `text` so that paths under `workspace` name kSandboxJobRoot instead.
std::string ToSandboxPath(const std::string& text, const std::string& workspace);

// The directories the interpreter at `python` needs readable: its prefix (the parent of
// its bin/) and, for a virtual environment, the base interpreter's prefix from
// pyvenv.cfg's `home`. Paths are resolved through symlinks.
std::vector<std::string> PythonReadPaths(const std::string& python);

// The host's GPU device nodes (/dev/nvidia*, /dev/nvidia-caps/*, WSL2's /dev/dxg), and the entries
// of /etc whose names start with "farm" (the worker's and farmd's configuration).
SandboxOptions DetectSandboxOptions(const std::string& bwrap);

// Runs `bwrap ... true` once: OK when the sandbox works on this host, else why not.
Status CheckSandbox(ProcessRunner& runner, const SandboxOptions& options);

class SandboxExecutor final : public Executor {
 public:
  SandboxExecutor(ProcessRunner& runner, SandboxOptions options)
      : runner_(runner), options_(std::move(options)) {}
  std::string Name() const override { return "sandbox"; }
  // Validation steps go through Start() too, so the recipe's script is sandboxed.
  bool RunsOnHost() const override { return false; }
  Result<std::unique_ptr<Process>> Start(const ExecRequest& request) override;

 private:
  ProcessRunner& runner_;
  const SandboxOptions options_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_SANDBOX_EXECUTOR_H_
