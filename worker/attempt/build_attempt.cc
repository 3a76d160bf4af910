// The build attempt (build_attempt.h): the venv (provisioned or on a host interpreter), the
// job's environment, the compile cache, the build command, and what becomes of the wheels
// it leaves.
#include "worker/attempt/build_attempt.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/arch.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/job_check.h"
#include "common/wheel/wheel_bytes.h"
#include "worker/client/retry.h"
#include "worker/exec/executor_runner.h"
#include "worker/exec/sandbox_executor.h"
#include "worker/exec/untrusted_dir.h"
#include "worker/job/torch_pin.h"
#include "worker/job/wheel_label.h"
#include "worker/job/workspace.h"
#include "worker/validate/validation.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

// The largest wheel the worker copies out of a workspace (farmd's own limit is lower).
constexpr int64_t kMaxWheelBytes = int64_t{16} << 30;

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

// "runs on cc 9.0, 12.1; 3 images (sm_90a, sm_121a, compute_121a)" for the job log.
std::string DescribeManifest(const farm::v1::ArchManifest& m) {
  if (m.images_size() == 0) return "no CUDA device code";
  std::set<std::string> archs;
  for (const auto& image : m.images()) archs.insert(image.arch());
  std::string out = "runs on cc";
  for (int i = 0; i < m.runs_on_size(); ++i) out += (i ? ", " : " ") + m.runs_on(i);
  out += "; " + std::to_string(m.images_size()) + " images (";
  for (const auto& a : archs) out += (a == *archs.begin() ? "" : ", ") + a;
  return out + ")";
}

}  // namespace

Outcome BuildAttempt::Run(LogShipper& log, const std::string& ws) {
  auto src = ctx_.FetchAndPatch(log, ws);
  if (!src.ok()) return Infra(src.status().message());
  auto built = Build(log, ws, *src);
  if (!built.ok()) return Infra(built.status().message());
  return *built;
}

Result<Outcome> BuildAttempt::Build(LogShipper& log, const std::string& ws,
                                    const std::string& src) {
  const auto& recipe = ctx_.job().recipe();
  auto system = [&log](const std::string& text) { log.Append(farm::v1::SYSTEM, "farm: " + text); };
  auto dir = BuildDir(src, recipe);
  if (!dir.ok()) return RecipeError(dir.status().message());
  const std::string& build_dir = *dir;
  const EnvMap tool_env = BaseEnv(ctx_.settings().worker_env);
  BuildTools tools;
  if (ctx_.job().has_environment()) {
    FARM_RETURN_IF_ERROR(ctx_.FetchInputs(log, ws));
    FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/wheels"));
    FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/tmp"));
    auto made = ctx_.ProvisionEnvironment(log, ws);
    if (!made.ok()) return ctx_.ProvisioningOutcome(made.status());
    FARM_RETURN_IF_ERROR(UseProvisioned(log, ws, tool_env, std::move(made).value(), &tools));
  } else {
    FARM_RETURN_IF_ERROR(MakeHostVenv(log, ws, tool_env, &tools));
  }
  double held_gb = 0;
  JobEnvInputs in = EnvInputs(ws, tools, &held_gb);
  EnvMap env = BuildJobEnv(in);
  if (recipe.build_on_target_gpu()) {
    FARM_ASSIGN_OR_RETURN(farm::v1::Gpu gpu, TargetGpu(ctx_.job().cell(), ctx_.settings().caps));
    env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu.index());
    system("building on GPU " + std::to_string(gpu.index()) + " (" + gpu.name() + ", cc " +
           std::to_string(gpu.cc_major()) + "." + std::to_string(gpu.cc_minor()) +
           "): the recipe builds on the GPU its arch list targets");
  }
  JobCacheGuard cache(
      ctx_.settings().compile_cache == nullptr
          ? JobCacheUse{}
          : ctx_.settings().compile_cache->PrepareJob(
                recipe, ctx_.job().cache_namespace(), ws, ctx_.deps().executor->Name(), env,
                ImageCheckFor(*ctx_.deps().executor, ws, recipe.container_image(), env)));
  FARM_RETURN_IF_ERROR(UseCache(log, cache.use()));
  if (std::string note = FatbinCompressionNote(recipe, tools.toolkit); !note.empty()) system(note);
  system("running the build command in " + build_dir + " (MAX_JOBS=" + env["MAX_JOBS"] +
         (tools.toolkit.path().empty() ? "" : ", CUDA " + tools.toolkit.version()) + ", executor " +
         ctx_.deps().executor->Name() + (held_gb > 0 ? ", " + HeldText(held_gb) : "") + ")");
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

Status BuildAttempt::UseProvisioned(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                                    env::ProvisionedEnv provisioned, BuildTools* tools) {
  provisioned_torch_ = provisioned.torch;
  tools->python.set_version(ctx_.job().environment().python());
  tools->python.set_path(provisioned.python);
  log.Append(farm::v1::SYSTEM, "farm: creating venv: the environment's own, " +
                                   provisioned.venv_dir + " (base " + provisioned.base_python +
                                   ")");
  if (!provisioned.cuda_home.empty()) {  // none: the recipe compiles no CUDA
    tools->toolkit.set_version(ctx_.job().environment().cuda());
    tools->toolkit.set_path(provisioned.cuda_home);
  }
  tools->provisioned = std::move(provisioned);  // its cache pins last until the build ends
  // The workspace, the clone's folders among it, becomes the build user's; the clone's
  // files are links to the sealed snapshot and stay the worker's (GiveToBuildUser never
  // hands over a file another tree shares).
  FARM_RETURN_IF_ERROR(sandbox::GiveToBuildUser(ctx_.settings().build_user, ws, true));
  // The required wheels go in as the build does, confined: the environment's interpreter
  // came from an upstream.
  ExecRequest base{
      {}, ctx_.inputs().dir, tool_env, ws, ctx_.job().recipe().container_image(), kKillGraceMs};
  base.offline = true;
  base.host_read_paths = sandbox::PythonReadPaths(tools->python.path());
  ExecutorProcessRunner confined(*ctx_.deps().executor, base);
  StepRunner confined_steps(confined, tool_env, &ctx_.control(), ToLog(log));
  return InstallBuildInputs(log, confined_steps, ws + "/venv");
}

Status BuildAttempt::MakeHostVenv(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                                  BuildTools* tools) {
  FARM_ASSIGN_OR_RETURN(tools->python, SelectPython(ctx_.job().cell(), ctx_.settings().caps));
  FARM_ASSIGN_OR_RETURN(tools->toolkit, SelectToolkit(ctx_.job().cell(), ctx_.settings().caps));
  log.Append(farm::v1::SYSTEM, "farm: creating venv with " + tools->python.path() + " (Python " +
                                   tools->python.version() + ")");
  StepRunner steps(*ctx_.deps().runner, tool_env, &ctx_.control(), ToLog(log));
  FARM_RETURN_IF_ERROR(CreateVenv(steps, tools->python.path(),
                                  ctx_.job().recipe().system_site_packages(), ws + "/venv"));
  FARM_RETURN_IF_ERROR(ctx_.FetchInputs(log, ws));
  FARM_RETURN_IF_ERROR(InstallBuildInputs(log, steps, ws + "/venv"));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/wheels"));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(ws + "/tmp"));
  // The build runs as the build user: what the worker made here (the venv, the required
  // wheels) becomes that user's.
  return sandbox::GiveToBuildUser(ctx_.settings().build_user, ws, true);
}

JobEnvInputs BuildAttempt::EnvInputs(const std::string& ws, const BuildTools& tools,
                                     double* held_gb) const {
  JobEnvInputs in{.job = &ctx_.job(),
                  .worker_env = ctx_.settings().worker_env,
                  .venv_dir = ws + "/venv",
                  .wheel_dir = ws + "/wheels",
                  .tmp_dir = ws + "/tmp",
                  .python_version = tools.python.version(),
                  .toolkit = tools.toolkit,
                  .cores = ctx_.settings().caps.cpu_cores(),
                  .available_memory_bytes = ctx_.deps().probe->AvailableMemoryBytes(),
                  .secrets = ctx_.settings().secrets,
                  .source_date_epoch = ctx_.source_date_epoch(),
                  .wsl2 = ctx_.settings().caps.wsl2()};
  // Unified memory: this job's validation and those of the jobs beside it share the RAM
  // the compile jobs use.
  *held_gb = ValidationReserveGb(ctx_.job(), ctx_.settings().caps);
  if (ctx_.settings().validation_held_gb)
    *held_gb += ctx_.settings().validation_held_gb(ctx_.job().job_id());
  in.reserved_bytes = static_cast<int64_t>(*held_gb * double(int64_t{1} << 30));
  return in;
}

Status BuildAttempt::UseCache(LogShipper& log, const JobCacheUse& cache_use) {
  if (cache_use.used) {
    // Given once: later builds of the namespace find it the build user's already.
    struct stat st {};
    if (::stat(cache_use.namespace_dir.c_str(), &st) == 0 &&
        st.st_uid != ctx_.settings().build_user.uid) {
      FARM_RETURN_IF_ERROR(
          sandbox::GiveToBuildUser(ctx_.settings().build_user, cache_use.namespace_dir, true));
    }
  }
  if (!cache_use.note.empty()) log.Append(farm::v1::SYSTEM, "farm: " + cache_use.note);
  return Status::Ok();
}

Result<Outcome> BuildAttempt::RunBuildCommand(LogShipper& log, const ExecRequest& req,
                                              JobCacheGuard& cache) {
  FARM_ASSIGN_OR_RETURN(std::unique_ptr<Process> process, ctx_.deps().executor->Start(req));
  ctx_.control().SetProcess(process.get());
  // A container's processes are not this host's children: no live memory figure for them.
  const bool host_processes = ctx_.deps().executor->Kind() != ExecutorKind::kContainer;
  ctx_.control().progress.Begin(host_processes ? process->pid() : 0,
                                cache.use().used ? cache.use().workspace : "");
  int64_t timeout_s = ctx_.job().timeout_seconds() > 0 ? ctx_.job().timeout_seconds() : 3600;
  int64_t sampled_ms = 0;
  ProcessResult r = process->Wait(
      [&log, &sampled_ms, this](OutputStream s, const std::string& line) {
        ctx_.control().progress.OnLine(line);
        // The process tree's memory, between heartbeats too (at most every 250 ms).
        if (int64_t now = ctx_.deps().clock->SteadyMs(); now - sampled_ms >= 250) {
          sampled_ms = now;
          ctx_.control().progress.Sample();
        }
        log.Append(s == OutputStream::kStdout ? farm::v1::STDOUT : farm::v1::STDERR, line);
      },
      timeout_s * 1000);
  ctx_.control().progress.End();
  ctx_.control().SetProcess(nullptr);
  // wait4 counts only the processes the command's own tree waited for: in the sandbox,
  // bwrap's init reaps the build and wait4 sees bwrap alone (10 MiB for a build that held
  // 150 MiB). The peaks sampled from /proc (VmHWM of every process of the tree, at each
  // heartbeat and line) see them; the log and the attempt both give the larger figure.
  const int64_t peak =
      std::max(r.peak_rss_bytes, ctx_.control().progress.Snapshot().peak_rss_bytes);
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
  if (ctx_.control().stopped()) return ctx_.StoppedOutcome(out);
  if (r.timed_out) {
    out.cause = farm::v1::CAUSE_TIMED_OUT;
    out.detail = "build exceeded its timeout of " + std::to_string(timeout_s) + " s";
  } else if (r.exit_code != 0) {
    out.cause = farm::v1::CAUSE_BUILD_FAILED;
    out.detail = "build command exited with code " + std::to_string(r.exit_code);
  }
  return out;
}

Status BuildAttempt::InstallBuildInputs(LogShipper& log, StepRunner& steps,
                                        const std::string& venv) {
  if (ctx_.inputs().for_build.empty()) return Status::Ok();
  log.Append(farm::v1::SYSTEM, "farm: installing " +
                                   std::to_string(ctx_.inputs().for_build.size()) +
                                   " required wheel(s) into the build venv (--no-index)");
  std::vector<std::string> argv = {venv + "/bin/python",
                                   "-m",
                                   "pip",
                                   "install",
                                   "--no-deps",
                                   "--no-index",
                                   "--disable-pip-version-check",
                                   "--no-input",
                                   "--find-links",
                                   ctx_.inputs().dir};
  argv.insert(argv.end(), ctx_.inputs().for_build.begin(), ctx_.inputs().for_build.end());
  Status installed = steps.Run(argv, ctx_.inputs().dir, kInstallTimeoutMs);
  if (!installed.ok()) return installed.WithContext("installing the required wheels");
  return Status::Ok();
}

// Checks every wheel, validates them together, uploads them and says how the attempt
// ended. Wheels that fail validation are still uploaded (with their report) so people can
// inspect them; their job fails and nothing publishes or indexes them.
Outcome BuildAttempt::FinishWheels(LogShipper& log, const JobEnvInputs& env_in,
                                   const std::string& build_dir, const std::string& python,
                                   Outcome built) {
  // The build's wheel directory is hostile: its wheels are copied out (never a link, a
  // FIFO or a file elsewhere), and only the copies are checked, validated and uploaded.
  const std::string ws = stdfs::path(env_in.wheel_dir).parent_path().string();
  const std::string out_dir = ctx_.OutputDir(ws);
  auto taken = CopyOutFiles(ws, stdfs::path(env_in.wheel_dir).filename().string(), ".whl", out_dir,
                            kMaxWheelBytes);
  if (!taken.ok() && taken.status().code() != StatusCode::kNotFound) {
    if (taken.status().code() != StatusCode::kFailedPrecondition) {
      return Infra("taking the wheels: " + taken.status().message());
    }
    built.cause = farm::v1::CAUSE_BUILD_FAILED;
    built.detail = "the build's wheels are refused: " + taken.status().message();
    return built;
  }
  std::vector<std::string> wheels = taken.ok() ? *taken : std::vector<std::string>();
  if (wheels.empty()) {
    built.cause = farm::v1::CAUSE_BUILD_FAILED;
    built.detail = "build produced no wheel";
    return built;
  }
  // Marks the checks phase in the log (the dashboard groups lines by phase).
  log.Append(farm::v1::SYSTEM, "farm: checking " + std::to_string(wheels.size()) +
                                   " wheel(s): structure, tags, arch manifest");
  std::vector<farm::v1::ArtifactHeader> headers;
  farm::v1::ArchManifest device_manifest;
  for (const auto& wheel : wheels) {
    auto header = CheckOne(log, wheel);
    if (!header.ok()) {
      built.cause = header.status().code() == StatusCode::kAborted
                        ? farm::v1::CAUSE_VALIDATION_FAILED
                        : farm::v1::CAUSE_INFRASTRUCTURE;
      built.detail = header.status().message();
      return built;
    }
    if (header->manifest().images_size() > 0) device_manifest = header->manifest();
    auto labelled = Label(log, wheel, *header);
    if (!labelled.ok()) {
      built.cause = farm::v1::CAUSE_BUILD_FAILED;
      built.detail = "labelling " + header->filename() + " failed: " + labelled.status().message();
      return built;
    }
    headers.push_back(std::move(labelled).value());
  }
  wheels.clear();
  for (const auto& h : headers) wheels.push_back(out_dir + "/" + h.filename());
  auto report = ctx_.Validate(log, env_in, build_dir, python, wheels, device_manifest);
  if (ctx_.control().stopped()) return ctx_.StoppedOutcome(built);
  if (!report.ok()) return Infra("validation could not run: " + report.status().message());
  built.validation = std::move(report).value();
  for (size_t i = 0; i < wheels.size(); ++i) {
    if (ctx_.control().stopped()) return ctx_.StoppedOutcome(built);
    if (Status s = UploadOne(log, wheels[i], headers[i]); !s.ok()) {
      // farmd's own wheel check refused it (a project another principal owns): another
      // attempt would build the same name, so the wheel check failed, as the worker's would.
      bool refused = s.code() == StatusCode::kPermissionDenied;
      std::string why = s.message();
      if (why.rfind("UploadArtifact: ", 0) == 0) why.erase(0, 16);  // the call's name
      if (refused) log.Append(farm::v1::SYSTEM, "farm: error: farmd's wheel check refused " + why);
      built.cause = refused ? farm::v1::CAUSE_VALIDATION_FAILED : farm::v1::CAUSE_INFRASTRUCTURE;
      built.detail = refused ? "farmd's wheel check refused " + why
                             : "uploading " + headers[i].filename() + " failed: " + why;
      return built;
    }
  }
  if (built.validation.state() == farm::v1::VALIDATION_FAILED) {
    built.cause = farm::v1::CAUSE_VALIDATION_FAILED;
    built.detail = "validation failed: " + built.validation.message();
  }
  return built;
}

// Size, sha256 and the structure and arch-manifest checks of one wheel. Aborted (naming
// the wheel) when a check fails; other errors are the worker's own trouble.
Result<farm::v1::ArtifactHeader> BuildAttempt::CheckOne(LogShipper& log, const std::string& path) {
  farm::v1::ArtifactHeader header;
  header.set_job_id(ctx_.job().job_id());
  header.set_attempt(ctx_.job().attempt());
  header.set_filename(stdfs::path(path).filename().string());
  int64_t size = 0;
  FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileHex(path, &size));
  header.set_size(size);
  header.set_sha256(sha);
  if (!ctx_.deps().wheel_hook) return header;
  Status checked = ctx_.deps().wheel_hook(ctx_.job(), path, &header);
  // Where the bytes go, failed or not: a wheel over its size_budget fails right here.
  std::istringstream bytes(wheel::FormatWheelBytes(header.manifest(), "  "));
  for (std::string line; std::getline(bytes, line);) {
    log.Append(farm::v1::SYSTEM, "farm: " + header.filename() + ": " + line);
  }
  if (!checked.ok()) return Status::Aborted(header.filename() + ": " + checked.message());
  log.Append(farm::v1::SYSTEM,
             "farm: " + header.filename() + ": " + DescribeManifest(header.manifest()));
  std::string ignored =
      wheel::ArchListIgnoredMessage(ctx_.job().cell().arch_list(), header.manifest());
  if (!ignored.empty()) {
    log.Append(farm::v1::SYSTEM, "farm: warning: " + header.filename() + ": " + ignored);
  }
  return header;
}

// Puts the wheel's identity into its name (wheel_label.h) and leaves the labelled wheel
// in the wheel directory in place of the one the build wrote.
Result<farm::v1::ArtifactHeader> BuildAttempt::Label(LogShipper& log, const std::string& path,
                                                     const farm::v1::ArtifactHeader& header) {
  const std::string wheel_dir = stdfs::path(path).parent_path().string();
  const std::string out_dir = wheel_dir + "/labelled";
  FARM_ASSIGN_OR_RETURN(std::string torch, TorchRequirementForJob(ctx_.job(), ctx_.settings().caps,
                                                                  provisioned_torch_));
  FARM_ASSIGN_OR_RETURN(LabelledWheel labelled,
                        LabelWheelForJob(ctx_.job(), path, header, out_dir, torch));
  if (!labelled.rewritten) return labelled.header;
  FARM_RETURN_IF_ERROR(fs::RemoveAll(path));
  std::error_code ec;
  stdfs::rename(labelled.path, wheel_dir + "/" + labelled.header.filename(), ec);
  if (ec) return Status::Internal("moving " + labelled.path + ": " + ec.message());
  log.Append(farm::v1::SYSTEM, "farm: labelled " + header.filename() + " as " +
                                   labelled.header.filename() + " (sha256 " +
                                   labelled.header.sha256() + ")" +
                                   (torch.empty() ? "" : ", requires " + torch));
  return labelled.header;
}

Status BuildAttempt::UploadOne(LogShipper& log, const std::string& path,
                               farm::v1::ArtifactHeader header) {
  log.Append(farm::v1::SYSTEM, "farm: uploading " + header.filename() + " (" +
                                   std::to_string(header.size()) + " bytes, sha256 " +
                                   header.sha256() + ")");
  auto uploaded =
      RetryUnavailable(*ctx_.deps().clock, ctx_.RetryDeadlineMs(kReportRetryMs), ctx_.deps().client,
                       [&] { return ctx_.deps().client->UploadArtifact(header, path); });
  return uploaded.status();
}

}  // namespace farm::agent
