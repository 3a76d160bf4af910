#include "worker/exec/container_executor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <random>

#include "common/log.h"
#include "common/sandbox/build_user.h"
#include "worker/exec/sandbox_executor.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

constexpr int64_t kMinMemoryBytes = int64_t{1} << 30;
constexpr int64_t kCleanupTimeoutMs = 30000;
// Host identity that means nothing inside the image: the image's passwd decides them.
const char* const kHostOnlyVars[] = {"HOME", "USER", "LOGNAME"};

std::string RandomSuffix() {
  std::random_device rd;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

bool IsDocker(const std::string& engine) {
  return stdfs::path(engine).filename().string().find("docker") != std::string::npos;
}

int EnvInt(const std::map<std::string, std::string>& env, const std::string& key, int fallback) {
  auto it = env.find(key);
  if (it == env.end()) return fallback;
  try {
    return std::max(1, std::stoi(it->second));
  } catch (...) {
    return fallback;
  }
}

Result<std::pair<uint32_t, uint32_t>> ParseUser(const std::string& user) {
  size_t colon = user.find(':');
  try {
    if (colon == std::string::npos)
      return std::make_pair(uint32_t(std::stoul(user)), uint32_t(std::stoul(user)));
    return std::make_pair(uint32_t(std::stoul(user.substr(0, colon))),
                          uint32_t(std::stoul(user.substr(colon + 1))));
  } catch (...) {
    return Status::InvalidArgument("container user must be auto, image or UID:GID, got \"" + user +
                                   "\"");
  }
}

// The engine client: Kill() stops the container by name, Wait() removes it at the end.
class ContainerProcess final : public Process {
 public:
  ContainerProcess(ProcessRunner& runner, std::vector<std::string> engine_cmd,
                   std::map<std::string, std::string> engine_env, std::string name,
                   std::string banner, std::unique_ptr<Process> client)
      : runner_(runner),
        engine_cmd_(std::move(engine_cmd)),
        engine_env_(std::move(engine_env)),
        name_(std::move(name)),
        banner_(std::move(banner)),
        client_(std::move(client)) {}

  pid_t pid() const override { return client_->pid(); }

  ProcessResult Wait(const LineCallback& on_line, int64_t timeout_ms) override {
    if (on_line) on_line(OutputStream::kStderr, banner_);
    ProcessResult r = client_->Wait(on_line, timeout_ms);
    std::unique_ptr<Process> stopper;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      stopper = std::move(stopper_);
    }
    if (stopper) stopper->Wait(nullptr, kCleanupTimeoutMs);
    Remove();
    return r;
  }

  void Kill(int64_t grace_ms) override {
    {
      std::lock_guard lock(mu_);
      if (!done_ && !stopper_) {
        int secs = static_cast<int>(std::max<int64_t>(1, (grace_ms + 999) / 1000));
        auto stop = Spec({"stop", "-t", std::to_string(secs), name_});
        auto started = runner_.Start(stop);
        if (started.ok()) {
          stopper_ = std::move(*started);
        } else {
          log::Warn("stopping container " + name_ + ": " + started.status().message());
        }
      }
    }
    // The client ends when the container does; this only backs up a client that hangs.
    client_->Kill(grace_ms + 5000);
  }

 private:
  ProcessSpec Spec(std::vector<std::string> args) const {
    ProcessSpec spec;
    spec.argv = engine_cmd_;
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = engine_env_;
    spec.clear_env = true;
    return spec;
  }

  // A container still there (the client was killed, a timeout) is killed and removed.
  void Remove() {
    std::vector<std::string> args = {"rm", "-f"};
    if (!IsDocker(engine_cmd_[0])) args.insert(args.end(), {"-t", "0"});
    args.push_back(name_);
    auto out = RunAndCapture(runner_, Spec(args), kCleanupTimeoutMs);
    if (!out.ok()) log::Warn("removing container " + name_ + ": " + out.status().message());
  }

  ProcessRunner& runner_;
  const std::vector<std::string> engine_cmd_;
  const std::map<std::string, std::string> engine_env_;
  const std::string name_;
  const std::string banner_;
  std::unique_ptr<Process> client_;
  std::mutex mu_;
  std::unique_ptr<Process> stopper_;  // guarded by mu_
  bool done_ = false;                 // guarded by mu_
};

}  // namespace

ContainerHost RealContainerHost(std::function<int64_t()> memory) {
  ContainerHost h;
  h.available_memory_bytes = std::move(memory);
  h.path_exists = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0;
  };
  h.euid = [] { return static_cast<uint32_t>(::geteuid()); };
  h.chown_tree = [](const std::string& dir, uint32_t uid, uint32_t gid) -> Status {
    // Never through a link to a shared snapshot (GiveToBuildUser): the job's environment
    // stays the worker's.
    return sandbox::GiveToBuildUser(sandbox::BuildUser{.switches = true, .uid = uid, .gid = gid},
                                    dir, true);
  };
  return h;
}

std::string ContainerName(const std::map<std::string, std::string>& env,
                          const std::string& suffix) {
  auto get = [&env](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string("0") : it->second;
  };
  return "farm-job-" + get("FARM_JOB_ID") + "-a" + get("FARM_ATTEMPT") + "-" + suffix;
}

Result<ContainerGpus> ParseContainerGpus(const std::string& text) {
  if (text == "auto") return ContainerGpus::kAuto;
  if (text == "all") return ContainerGpus::kAll;
  if (text == "none") return ContainerGpus::kNone;
  return Status::InvalidArgument("--container-gpus must be auto, all or none, got \"" + text +
                                 "\"");
}

ContainerExecutor::ContainerExecutor(ProcessRunner& runner, ContainerOptions options,
                                     ContainerHost host)
    : runner_(runner), options_(std::move(options)), host_(std::move(host)) {}

std::string ContainerExecutor::Name() const {
  return stdfs::path(options_.engine).filename().string();
}

Result<ContainerPlan> ContainerExecutor::Plan(const ExecRequest& req,
                                              const std::string& suffix) const {
  ContainerPlan plan;
  plan.image = req.image.empty() ? options_.default_image : req.image;
  if (plan.image.empty()) {
    return Status::FailedPrecondition(
        "no builder image: the recipe sets no container_image and the worker has no "
        "--container-image");
  }
  if (req.workspace.empty() || req.workspace[0] != '/') {
    return Status::InvalidArgument("container jobs need an absolute workspace path");
  }
  const bool docker = IsDocker(options_.engine);
  plan.name = ContainerName(req.env, suffix);
  plan.cpus = EnvInt(req.env, "MAX_JOBS", 1);
  int64_t avail = host_.available_memory_bytes ? host_.available_memory_bytes() : 0;
  if (avail > 0)
    plan.memory_bytes = std::max(kMinMemoryBytes, avail / std::max(1, options_.max_jobs));

  std::vector<std::string>& a = plan.argv;
  a.push_back(options_.engine);
  a.insert(a.end(), options_.engine_args.begin(), options_.engine_args.end());
  a.insert(a.end(), {"run", "--rm", "--name", plan.name, "--label",
                     "farm.job=" + (req.env.count("FARM_JOB_ID") ? req.env.at("FARM_JOB_ID") : "0"),
                     "--security-opt", "no-new-privileges", "--hostname", plan.name});
  plan.network = options_.build_network && req.network && !req.offline;
  if (!plan.network) a.push_back("--network=none");
  a.insert(a.end(), {"--cpus", std::to_string(plan.cpus)});
  if (plan.memory_bytes > 0) {
    a.insert(a.end(), {"--memory", std::to_string(plan.memory_bytes >> 20) + "m"});
  }
  bool gpus = options_.gpus == ContainerGpus::kAll ||
              (options_.gpus == ContainerGpus::kAuto && host_.path_exists &&
               (host_.path_exists("/dev/nvidiactl") || host_.path_exists("/dev/dxg")));
  if (gpus) {
    if (docker)
      a.insert(a.end(), {"--gpus", "all"});
    else
      a.insert(a.end(), {"--device", "nvidia.com/gpu=all"});
  }
  if (options_.user != "image") {
    std::string user = options_.user;
    uint32_t euid = host_.euid ? host_.euid() : 0;
    if (user == "auto" && euid != 0 && !docker) {
      a.push_back("--userns=keep-id");
    } else {
      if (user == "auto")
        user = euid == 0 ? "1000:1000" : std::to_string(euid) + ":" + std::to_string(::getegid());
      FARM_ASSIGN_OR_RETURN(auto ids, ParseUser(user));
      user = std::to_string(ids.first) + ":" + std::to_string(ids.second);
      a.insert(a.end(), {"--user", user});
      if (euid == 0 && ids.first != 0) plan.chown_user = user;
    }
  }
  a.insert(a.end(), {"-v", req.workspace + ":" + req.workspace + ":rw", "-w",
                     req.cwd.empty() ? req.workspace : req.cwd});
  // The environment over the workspace, read-only: a container's root (the image's user)
  // could otherwise write the snapshot every later job of the cell uses.
  for (const std::string& p : req.read_only_in_workspace) {
    a.insert(a.end(), {"-v", p + ":" + p + ":ro"});
  }
  for (const ExecMount& m : req.mounts) {
    a.insert(a.end(), {"-v", m.path + ":" + m.path + (m.read_only ? ":ro" : ":rw")});
  }
  a.insert(a.end(), options_.run_args.begin(), options_.run_args.end());
  for (const auto& [k, v] : req.env) {
    if (std::find(std::begin(kHostOnlyVars), std::end(kHostOnlyVars), k) != std::end(kHostOnlyVars))
      continue;
    a.insert(a.end(), {"--env", k + "=" + v});
  }
  a.push_back(plan.image);
  a.insert(a.end(), req.argv.begin(), req.argv.end());
  return plan;
}

Result<std::unique_ptr<Process>> ContainerExecutor::Start(const ExecRequest& req) {
  FARM_ASSIGN_OR_RETURN(ContainerPlan plan, Plan(req, RandomSuffix()));
  if (!plan.chown_user.empty() && host_.chown_tree) {
    FARM_ASSIGN_OR_RETURN(auto ids, ParseUser(plan.chown_user));
    FARM_RETURN_IF_ERROR(host_.chown_tree(req.workspace, ids.first, ids.second));
    // The build user writes the shared compile cache too; root keeps access anyway.
    for (const ExecMount& m : req.mounts) {
      if (!m.read_only) FARM_RETURN_IF_ERROR(host_.chown_tree(m.path, ids.first, ids.second));
    }
  }
  ProcessSpec spec;
  spec.argv = plan.argv;
  spec.env = options_.engine_env;
  spec.clear_env = true;
  spec.kill_grace_ms = req.kill_grace_ms;
  FARM_ASSIGN_OR_RETURN(auto client, runner_.Start(spec));
  std::vector<std::string> engine_cmd = {options_.engine};
  engine_cmd.insert(engine_cmd.end(), options_.engine_args.begin(), options_.engine_args.end());
  std::string banner =
      "farm: container " + plan.name + " (image " + plan.image + ", " +
      (plan.network ? "network" : "no network") + ", cpus " + std::to_string(plan.cpus) +
      (plan.memory_bytes > 0 ? ", memory " + std::to_string(plan.memory_bytes >> 20) + " MiB"
                             : "") +
      ")";
  return std::unique_ptr<Process>(
      std::make_unique<ContainerProcess>(runner_, std::move(engine_cmd), options_.engine_env,
                                         plan.name, std::move(banner), std::move(client)));
}

namespace {

// The native executor, in a bubblewrap sandbox unless `mode` is off or (auto) bwrap is
// missing or cannot make one here.
Result<std::unique_ptr<Executor>> MakeNativeExecutor(const std::string& mode,
                                                     const sandbox::BuildUser& build_user,
                                                     ProcessRunner& runner) {
  if (mode != "off") {
    std::string bwrap = FindInPath("bwrap");
    sandbox::Options options = sandbox::Detect(bwrap);
    options.build_user = build_user;
    Status works = bwrap.empty() ? Status::NotFound("bubblewrap (bwrap) is not installed")
                                 : sandbox::Check(runner, options);
    if (works.ok()) {
      if (build_user.switches) log::Info("builds run as " + build_user.name + " in the sandbox");
      return std::unique_ptr<Executor>(std::make_unique<SandboxExecutor>(runner, options));
    }
    if (mode == "bwrap") return works.WithContext("--sandbox bwrap");
    log::Warn(
        "builds run WITHOUT a sandbox, with this worker's own rights (its token, other "
        "jobs' workspaces and the compile cache are in reach): " +
        works.message() +
        "; install bubblewrap (apt-get install bubblewrap) or pass --sandbox off to "
        "silence this");
  }
  if (build_user.switches) {
    log::Warn("builds run as root: only the sandbox runs them as " + build_user.name);
  }
  return std::unique_ptr<Executor>(std::make_unique<NativeExecutor>(runner));
}

}  // namespace

Result<std::unique_ptr<Executor>> MakeExecutor(const WorkerConfig& config, ProcessRunner& runner,
                                               std::function<int64_t()> available_memory) {
  if (config.executor == "native") {
    return MakeNativeExecutor(config.sandbox, config.build_user, runner);
  }
  ContainerOptions o;
  o.engine = config.executor;
  o.engine_args = config.container_engine_args;
  o.run_args = config.container_run_args;
  o.default_image = config.container_image;
  o.build_network = config.container_network != "none";  // "none" also fetches offline
  FARM_ASSIGN_OR_RETURN(o.gpus, ParseContainerGpus(config.container_gpus));
  o.user = config.container_user;
  if (o.user != "auto" && o.user != "image") FARM_RETURN_IF_ERROR(ParseUser(o.user).status());
  o.max_jobs = config.max_jobs;
  EnvMap env = CurrentEnv();
  for (const char* k :
       {"PATH", "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CONTAINERS_CONF",
        "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF", "CONTAINER_HOST", "DOCKER_HOST",
        "DOCKER_CONFIG", "TMPDIR", "LANG", "USER", "LOGNAME"}) {
    if (auto it = env.find(k); it != env.end()) o.engine_env[k] = it->second;
  }
  if (o.engine_env.count("PATH") == 0) o.engine_env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  return std::unique_ptr<Executor>(std::make_unique<ContainerExecutor>(
      runner, std::move(o), RealContainerHost(std::move(available_memory))));
}

Result<std::unique_ptr<Process>> OfflineToolRunner::Start(const ProcessSpec& spec) {
  const auto& a = spec.argv;
  bool git_net = a.size() >= 2 && stdfs::path(a[0]).filename() == "git" &&
                 std::any_of(a.begin() + 1, a.end(), [](const std::string& x) {
                   return x == "clone" || x == "fetch" || x == "pull" || x == "ls-remote";
                 });
  if (git_net) {
    for (const auto& x : a) {
      bool remote = x.find("://") != std::string::npos && x.rfind("file://", 0) != 0;
      bool scp_like = x.find('@') != std::string::npos && x.find(':') != std::string::npos;
      if (remote || scp_like) {
        return Status::PermissionDenied("fetching " + x +
                                        " needs the network, which this worker does not use "
                                        "(--container-network none)");
      }
    }
  }
  return inner_.Start(spec);
}

}  // namespace farm::agent
