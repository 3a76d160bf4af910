// ContainerExecutor: runs each build command inside a builder image with podman or docker
// instead of directly on the host. The job's workspace is mounted at the same path, so the
// job runner's paths (venv, wheel dir, TMPDIR) mean the same inside; the container gets
// exactly the job's environment through explicit --env flags (never the worker's), the
// request's extra mounts (the compile cache) at the same paths, no
// network unless the operator allows it and the request is not offline (validation never
// gets it), CPU and memory limits from the job's share of the host, the GPUs when the host
// has them, and a unique name (also its host name, so what runs inside can tell where it
// ran) so that stopping the job stops the container and not only the engine's client
// process.
//
// The returned Process is the engine client (`podman run ...`): its stdout/stderr are the
// container's, so logs stream as for native jobs. Kill() starts `ENGINE stop -t N NAME`;
// Wait() ends with `ENGINE rm -f NAME`, so no container outlives its job (timeouts
// included). Thread-safe: several jobs start containers at once.
#ifndef FARM_WORKER_EXEC_CONTAINER_EXECUTOR_H_
#define FARM_WORKER_EXEC_CONTAINER_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"
#include "worker/config/config.h"
#include "worker/exec/executor.h"

namespace farm::agent {

enum class ContainerGpus { kAuto, kAll, kNone };

struct ContainerOptions {
  std::string engine = "podman";              // "podman" or "docker" (a name on PATH or a path)
  std::vector<std::string> engine_args;       // before `run` (e.g. --runtime, --cgroup-manager)
  std::vector<std::string> run_args;          // after `run` (e.g. --ulimit, -v /usr:/usr:ro)
  std::string default_image;                  // when the recipe names none
  bool build_network = false;                 // false: every build runs with --network=none; true:
                                              // builds whose recipe sets `network: true` get it
  ContainerGpus gpus = ContainerGpus::kAuto;  // auto: when /dev/nvidiactl or /dev/dxg exist
  // "auto": a root worker runs builds as 1000:1000 (and hands it the workspace); a
  // non-root worker runs them as itself. "image": the image's own user. Else "UID:GID".
  std::string user = "auto";
  int max_jobs = 1;                               // the worker's concurrent jobs (memory share)
  std::map<std::string, std::string> engine_env;  // the engine client's environment
};

// What the executor needs from the host, behind seams for tests.
struct ContainerHost {
  std::function<int64_t()> available_memory_bytes;  // at job start
  std::function<bool(const std::string&)> path_exists;
  std::function<uint32_t()> euid;
  // Gives `dir` and everything below it to uid:gid. Root workers only.
  std::function<Status(const std::string& dir, uint32_t uid, uint32_t gid)> chown_tree;
};

// The real host: /proc/meminfo-free memory from `memory`, stat(2), geteuid(2), lchown(2).
ContainerHost RealContainerHost(std::function<int64_t()> memory);

// Everything one `ENGINE run` needs, resolved from the request and the options.
struct ContainerPlan {
  std::string name;  // unique per job attempt
  std::string image;
  std::vector<std::string> argv;  // the full engine command line
  std::string chown_user;         // "UID:GID" to hand the workspace to, or ""
  int cpus = 1;
  int64_t memory_bytes = 0;
  bool network = false;  // false: --network=none
};

class ContainerExecutor final : public Executor {
 public:
  ContainerExecutor(ProcessRunner& runner, ContainerOptions options, ContainerHost host);

  // "podman" or "docker" (the engine's base name).
  std::string Name() const override;
  ExecutorKind Kind() const override { return ExecutorKind::kContainer; }

  // Starts `ENGINE run` for the request. FailedPrecondition when neither the recipe nor
  // the worker names an image; the runner's error when the engine cannot start.
  Result<std::unique_ptr<Process>> Start(const ExecRequest& request) override;

  // Resolves the run without starting anything (unit tests, logs). `suffix` makes the
  // container name unique.
  Result<ContainerPlan> Plan(const ExecRequest& request, const std::string& suffix) const;

 private:
  ProcessRunner& runner_;
  const ContainerOptions options_;
  const ContainerHost host_;
};

// The container name for a request: farm-job-<FARM_JOB_ID>-a<FARM_ATTEMPT>-<suffix>.
std::string ContainerName(const std::map<std::string, std::string>& env, const std::string& suffix);

// Parses --container-gpus: auto, all or none.
Result<ContainerGpus> ParseContainerGpus(const std::string& text);

// The executor farm-worker's flags ask for: NativeExecutor for --executor native, else a
// ContainerExecutor whose engine client sees only the variables an engine needs (PATH,
// HOME, XDG_RUNTIME_DIR, CONTAINERS_*/DOCKER_* settings), never the worker's secrets.
// InvalidArgument for bad container flags.
Result<std::unique_ptr<Executor>> MakeExecutor(const WorkerConfig& config, ProcessRunner& runner,
                                               std::function<int64_t()> available_memory);

// The runner for the job's helper tools under --container-network none: it refuses to
// start `git clone`/`git fetch` of a remote URL (anything but a local path or file://), so
// no step of a job reaches the network. Everything else goes to `inner`. Thread-safe.
class OfflineToolRunner final : public ProcessRunner {
 public:
  explicit OfflineToolRunner(ProcessRunner& inner) : inner_(inner) {}
  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override;

 private:
  ProcessRunner& inner_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_CONTAINER_EXECUTOR_H_
