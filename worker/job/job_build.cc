// JobRunner's build attempt: the venv (provisioned or on a host interpreter), the job's
// environment, the compile cache, and the build command itself. The wheels it leaves are
// checked, validated and uploaded by FinishWheels (job_runner.cc).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "common/arch.h"
#include "common/fs.h"
#include "worker/exec/executor_runner.h"
#include "worker/exec/sandbox_executor.h"
#include "worker/job/job_outcome.h"
#include "worker/job/job_runner.h"
#include "worker/job/workspace.h"
#include "worker/validate/validation.h"

namespace farm::agent {
namespace {

// The GPU a build that takes its arch from the build machine's GPU runs on: the first one
// the cell's arch list serves (placement gave the job to this worker for it).
Result<farm::v1::Gpu> TargetGpu(const farm::v1::MatrixCell& cell,
                                const farm::v1::Capabilities& caps) {
  FARM_ASSIGN_OR_RETURN(auto targets, arch::ParseArchList(cell.arch_list()));
  std::vector<arch::Version> runs_on = arch::RunsOn(targets);
  for (const farm::v1::Gpu& gpu : caps.gpus()) {
    arch::Version cc{gpu.cc_major(), gpu.cc_minor()};
    if (targets.empty() || std::find(runs_on.begin(), runs_on.end(), cc) != runs_on.end()) {
      return gpu;
    }
  }
  return Status::FailedPrecondition("the recipe builds on the GPU its arch list (" +
                                    cell.arch_list() + ") targets, and this worker has none");
}

// "8 GB of unified memory held for GPU validation" for the build's log line.
std::string HeldText(double gb) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.3g GB of unified memory held for GPU validation", gb);
  return buf;
}

// The job log's sink for a command's output lines.
LineCallback ToLog(LogShipper& log) {
  return [&log](OutputStream s, const std::string& line) {
    log.Append(s == OutputStream::kStdout ? farm::v1::STDOUT : farm::v1::STDERR, line);
  };
}

}  // namespace

Result<Outcome> JobRunner::Build(LogShipper& log, const std::string& ws, const std::string& src) {
  const auto& recipe = job_.recipe();
  auto system = [&log](const std::string& text) { log.Append(farm::v1::SYSTEM, "farm: " + text); };
  auto dir = BuildDir(src, recipe);
  if (!dir.ok()) return RecipeError(dir.status().message());
  const std::string& build_dir = *dir;
  const EnvMap tool_env = BaseEnv(settings_.worker_env);
  BuildTools tools;
  if (job_.has_environment()) {
    FARM_RETURN_IF_ERROR(FetchInputs(log, ws));
    FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/wheels"));
    FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/tmp"));
    auto made = ProvisionEnvironment(log, ws);
    if (!made.ok()) return ProvisioningOutcome(made.status());
    FARM_RETURN_IF_ERROR(UseProvisioned(log, ws, tool_env, std::move(made).value(), &tools));
  } else {
    FARM_RETURN_IF_ERROR(MakeHostVenv(log, ws, tool_env, &tools));
  }
  double held_gb = 0;
  JobEnvInputs in = EnvInputs(ws, tools, &held_gb);
  EnvMap env = BuildJobEnv(in);
  if (recipe.build_on_target_gpu()) {
    FARM_ASSIGN_OR_RETURN(farm::v1::Gpu gpu, TargetGpu(job_.cell(), settings_.caps));
    env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu.index());
    system("building on GPU " + std::to_string(gpu.index()) + " (" + gpu.name() + ", cc " +
           std::to_string(gpu.cc_major()) + "." + std::to_string(gpu.cc_minor()) +
           "): the recipe builds on the GPU its arch list targets");
  }
  JobCacheGuard cache(settings_.compile_cache == nullptr
                          ? JobCacheUse{}
                          : settings_.compile_cache->PrepareJob(
                                recipe, job_.cache_namespace(), ws, deps_.executor->Name(), env,
                                ImageCheckFor(*deps_.executor, ws, recipe.container_image(), env)));
  FARM_RETURN_IF_ERROR(UseCache(log, cache.use()));
  if (std::string note = FatbinCompressionNote(recipe, tools.toolkit); !note.empty()) system(note);
  system("running the build command in " + build_dir + " (MAX_JOBS=" + env["MAX_JOBS"] +
         (tools.toolkit.path().empty() ? "" : ", CUDA " + tools.toolkit.version()) + ", executor " +
         deps_.executor->Name() + (held_gb > 0 ? ", " + HeldText(held_gb) : "") + ")");
  ExecRequest req{{"bash", "-eo", "pipefail", "-c", recipe.build_command()},
                  build_dir,
                  env,
                  ws,
                  recipe.container_image(),
                  kKillGraceMs,
                  cache.use().mounts};
  req.network = recipe.network();
  req.host_read_paths = sandbox::PythonReadPaths(tools.python.path());
  // A provisioned environment is read-only to the build: its files are the snapshot's.
  if (tools.provisioned) req.read_only_in_workspace = {tools.provisioned->venv_dir};
  if (!tools.toolkit.path().empty()) req.host_read_paths.push_back(tools.toolkit.path());
  FARM_ASSIGN_OR_RETURN(Outcome out, RunBuildCommand(log, req, cache));
  if (out.cause != farm::v1::CAUSE_COMPLETED) return out;
  return FinishWheels(log, in, build_dir, tools.python.path(), out);
}

Status JobRunner::UseProvisioned(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                                 env::ProvisionedEnv provisioned, BuildTools* tools) {
  provisioned_torch_ = provisioned.torch;
  tools->python.set_version(job_.environment().python());
  tools->python.set_path(provisioned.python);
  log.Append(farm::v1::SYSTEM, "farm: creating venv: the environment's own, " +
                                   provisioned.venv_dir + " (base " + provisioned.base_python +
                                   ")");
  if (!provisioned.cuda_home.empty()) {  // none: the recipe compiles no CUDA
    tools->toolkit.set_version(job_.environment().cuda());
    tools->toolkit.set_path(provisioned.cuda_home);
  }
  tools->provisioned = std::move(provisioned);  // its cache pins last until the build ends
  // The workspace, the clone's folders among it, becomes the build user's; the clone's
  // files are links to the sealed snapshot and stay the worker's (GiveToBuildUser never
  // hands over a file another tree shares).
  FARM_RETURN_IF_ERROR(sandbox::GiveToBuildUser(settings_.build_user, ws, true));
  // The required wheels go in as the build does, confined: the environment's interpreter
  // came from an upstream.
  ExecRequest base{{}, inputs_.dir, tool_env, ws, job_.recipe().container_image(), kKillGraceMs};
  base.offline = true;
  base.host_read_paths = sandbox::PythonReadPaths(tools->python.path());
  ExecutorProcessRunner confined(*deps_.executor, base);
  StepRunner confined_steps(confined, tool_env, control_.get(), ToLog(log));
  return InstallBuildInputs(log, confined_steps, ws + "/venv");
}

Status JobRunner::MakeHostVenv(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                               BuildTools* tools) {
  FARM_ASSIGN_OR_RETURN(tools->python, SelectPython(job_.cell(), settings_.caps));
  FARM_ASSIGN_OR_RETURN(tools->toolkit, SelectToolkit(job_.cell(), settings_.caps));
  log.Append(farm::v1::SYSTEM, "farm: creating venv with " + tools->python.path() + " (Python " +
                                   tools->python.version() + ")");
  StepRunner steps(*deps_.runner, tool_env, control_.get(), ToLog(log));
  FARM_RETURN_IF_ERROR(
      CreateVenv(steps, tools->python.path(), job_.recipe().system_site_packages(), ws + "/venv"));
  FARM_RETURN_IF_ERROR(FetchInputs(log, ws));
  FARM_RETURN_IF_ERROR(InstallBuildInputs(log, steps, ws + "/venv"));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/wheels"));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/tmp"));
  // The build runs as the build user: what the worker made here (the venv, the required
  // wheels) becomes that user's.
  return sandbox::GiveToBuildUser(settings_.build_user, ws, true);
}

JobEnvInputs JobRunner::EnvInputs(const std::string& ws, const BuildTools& tools,
                                  double* held_gb) const {
  JobEnvInputs in{.job = &job_,
                  .worker_env = settings_.worker_env,
                  .venv_dir = ws + "/venv",
                  .wheel_dir = ws + "/wheels",
                  .tmp_dir = ws + "/tmp",
                  .python_version = tools.python.version(),
                  .toolkit = tools.toolkit,
                  .cores = settings_.caps.cpu_cores(),
                  .available_memory_bytes = deps_.probe->AvailableMemoryBytes(),
                  .secrets = settings_.secrets,
                  .source_date_epoch = source_date_epoch_,
                  .wsl2 = settings_.caps.wsl2()};
  // Unified memory: this job's validation and those of the jobs beside it share the RAM
  // the compile jobs use.
  *held_gb = ValidationReserveGb(job_, settings_.caps);
  if (settings_.validation_held_gb) *held_gb += settings_.validation_held_gb(job_.job_id());
  in.reserved_bytes = static_cast<int64_t>(*held_gb * double(int64_t{1} << 30));
  return in;
}

Status JobRunner::UseCache(LogShipper& log, const JobCacheUse& cache_use) {
  if (cache_use.used) {
    // Given once: later builds of the namespace find it the build user's already.
    struct stat st {};
    if (::stat(cache_use.namespace_dir.c_str(), &st) == 0 &&
        st.st_uid != settings_.build_user.uid) {
      FARM_RETURN_IF_ERROR(
          sandbox::GiveToBuildUser(settings_.build_user, cache_use.namespace_dir, true));
    }
  }
  if (!cache_use.note.empty()) log.Append(farm::v1::SYSTEM, "farm: " + cache_use.note);
  return Status::Ok();
}

Result<Outcome> JobRunner::RunBuildCommand(LogShipper& log, const ExecRequest& req,
                                           JobCacheGuard& cache) {
  FARM_ASSIGN_OR_RETURN(std::unique_ptr<Process> process, deps_.executor->Start(req));
  control_->SetProcess(process.get());
  // A container's processes are not this host's children: no live memory figure for them.
  const bool host_processes = deps_.executor->Kind() != ExecutorKind::kContainer;
  control_->progress.Begin(host_processes ? process->pid() : 0,
                           cache.use().used ? cache.use().workspace : "");
  int64_t timeout_s = job_.timeout_seconds() > 0 ? job_.timeout_seconds() : 3600;
  int64_t sampled_ms = 0;
  ProcessResult r = process->Wait(
      [&log, &sampled_ms, this](OutputStream s, const std::string& line) {
        control_->progress.OnLine(line);
        // The process tree's memory, between heartbeats too (at most every 250 ms).
        if (int64_t now = deps_.clock->SteadyMs(); now - sampled_ms >= 250) {
          sampled_ms = now;
          control_->progress.Sample();
        }
        log.Append(s == OutputStream::kStdout ? farm::v1::STDOUT : farm::v1::STDERR, line);
      },
      timeout_s * 1000);
  control_->progress.End();
  control_->SetProcess(nullptr);
  // wait4 counts only the processes the command's own tree waited for: in the sandbox,
  // bwrap's init reaps the build and wait4 sees bwrap alone (10 MiB for a build that held
  // 150 MiB). The peaks sampled from /proc (VmHWM of every process of the tree, at each
  // heartbeat and line) see them; the log and the attempt both give the larger figure.
  const int64_t peak = std::max(r.peak_rss_bytes, control_->progress.Snapshot().peak_rss_bytes);
  Outcome out{farm::v1::CAUSE_COMPLETED, "", r.exit_code, peak};
  log.Append(farm::v1::SYSTEM, "farm: build command exited with code " +
                                   std::to_string(r.exit_code) + ", peak RSS " +
                                   fs::HumanBytes(peak));
  out.compile_cache = cache.Finish();
  // Only builds that compiled something have a hit rate to tell; a silent line keeps a
  // failing build's own last lines at the end of the log.
  const auto& stats = out.compile_cache;
  if (stats && stats->hits() + stats->misses() + stats->uncacheable() > 0) {
    log.Append(farm::v1::SYSTEM, "farm: " + DescribeCacheStats(*stats));
  }
  if (control_->stopped()) return StoppedOutcome(out);
  if (r.timed_out) {
    out.cause = farm::v1::CAUSE_TIMED_OUT;
    out.detail = "build exceeded its timeout of " + std::to_string(timeout_s) + " s";
  } else if (r.exit_code != 0) {
    out.cause = farm::v1::CAUSE_BUILD_FAILED;
    out.detail = "build command exited with code " + std::to_string(r.exit_code);
  }
  return out;
}

}  // namespace farm::agent
