#include "worker/attempt/attempt_context.h"

#include <filesystem>
#include <set>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "worker/client/retry.h"
#include "worker/exec/executor_runner.h"
#include "worker/exec/sandbox_executor.h"
#include "worker/exec/untrusted_dir.h"
#include "worker/job/workspace.h"
#include "worker/validate/validation.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

constexpr int64_t kShutdownRetryMs = 8000;

// The environment of the source tools (git, tar): the allow-listed worker variables, and git
// never prompts.
EnvMap ToolEnv(const EnvMap& worker_env) {
  EnvMap env = BaseEnv(worker_env);
  env["GIT_TERMINAL_PROMPT"] = "0";
  return env;
}

// "csrc/, setup.py, README.md": what the top of the source tree holds, sorted, at most 20.
std::string TopLevel(const std::string& src) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(src, ec)) {
    names.insert(e.path().filename().string() + (e.is_directory(ec) ? "/" : ""));
  }
  std::string out;
  size_t shown = 0;
  for (const auto& n : names) {
    if (++shown > 20) return out + ", and " + std::to_string(names.size() - 20) + " more";
    out += (out.empty() ? "" : ", ") + ToValidUtf8(n);
  }
  return out.empty() ? "nothing" : out;
}

std::string SourceText(const farm::v1::Source& s) {
  switch (s.kind_case()) {
    case farm::v1::Source::kLocalPath:
      return "directory " + s.local_path();
    case farm::v1::Source::kTarballPath:
      return "tarball " + s.tarball_path();
    case farm::v1::Source::kGit:
      return "git " + s.git().url() + " " + s.git().commit();
    case farm::v1::Source::kArchive:
      return s.archive().origin() + ", archive sha256 " + s.archive().sha256() + " from farmd";
    default:
      return "(none)";
  }
}

// The fixed parts of each validation step's container: the job's workspace (the
// validation directory's parent) and, read-only, the worker's own wheel directories for
// runtime requirements, which lie outside it.
ExecRequest ValidationContainer(const ValidationInputs& in, const std::string& image) {
  ExecRequest base = JobContainerBase(stdfs::path(in.dir).parent_path().string(), image, in.env);
  for (const std::string& dir : in.find_links) {
    if (dir.rfind(base.workspace + "/", 0) != 0) base.mounts.push_back({dir, true});
  }
  base.host_read_paths = sandbox::PythonReadPaths(in.python);
  return base;
}

}  // namespace

ExecRequest JobContainerBase(const std::string& ws, const std::string& image, const EnvMap& env) {
  ExecRequest base;
  base.workspace = ws;
  base.image = image;
  base.kill_grace_ms = kKillGraceMs;
  for (const char* id : {"FARM_JOB_ID", "FARM_ATTEMPT"}) {
    if (auto it = env.find(id); it != env.end()) base.env[id] = it->second;
  }
  return base;
}

ExecutableCheck ImageCheckFor(Executor& executor, const std::string& ws, const std::string& image,
                              const EnvMap& env) {
  if (executor.RunsOnHost()) return nullptr;
  ExecRequest base = JobContainerBase(ws, image, env);
  return [&executor, base](const std::string& path) { return HasExecutable(executor, base, path); };
}

Outcome Infra(const std::string& detail) { return {farm::v1::CAUSE_INFRASTRUCTURE, detail, -1, 0}; }

Result<std::string> BuildDir(const std::string& src, const farm::v1::Recipe& recipe) {
  const std::string& sub = recipe.subdirectory();
  if (sub.empty()) return src;
  stdfs::path p = stdfs::path(sub).lexically_normal();
  if (p.is_absolute() || (!p.empty() && *p.begin() == "..")) {
    return Status::InvalidArgument("subdirectory " + sub + " leaves the source tree");
  }
  std::string dir = src + "/" + p.string();
  if (stdfs::is_directory(dir)) return dir;
  std::string why = "subdirectory " + sub +
                    " does not exist in the source; its top level holds: " + TopLevel(src);
  if (recipe.source().has_archive() && recipe.source().archive().unwrap_single_directory()) {
    why +=
        " (a tarball whose entries all sit in one folder is unpacked with that folder as the "
        "root: subdirectory is relative to it)";
  }
  return Status::InvalidArgument(why);
}

Outcome RecipeError(const std::string& detail) {
  return {farm::v1::CAUSE_BUILD_FAILED, detail, -1, 0};
}

AttemptContext::AttemptContext(JobDeps deps, JobSettings settings, farm::v1::JobAssignment job,
                               std::shared_ptr<JobControl> control)
    : deps_(std::move(deps)),
      settings_(std::move(settings)),
      job_(std::move(job)),
      control_(std::move(control)) {}

int64_t AttemptContext::RetryDeadlineMs(int64_t normal_ms) const {
  bool stopping = settings_.shutting_down != nullptr && settings_.shutting_down->load();
  return deps_.clock->SteadyMs() + (stopping ? kShutdownRetryMs : normal_ms);
}

Outcome AttemptContext::StoppedOutcome(Outcome base) const {
  base.cause = control_->cause();
  base.detail = control_->detail();
  return base;
}

std::unique_ptr<ProcessRunner> AttemptContext::SourceRunner(const std::string& ws,
                                                            bool network) const {
  if (deps_.executor->Kind() != ExecutorKind::kSandbox) return ForwardTo(*deps_.runner);
  ExecRequest base;
  base.workspace = ws;
  base.network = network;
  base.kill_grace_ms = kKillGraceMs;
  if (!settings_.git.ca_file.empty()) base.host_read_paths.push_back(settings_.git.ca_file);
  return std::make_unique<ExecutorProcessRunner>(*deps_.executor, std::move(base));
}

std::string AttemptContext::OutputDir(const std::string& ws) const {
  return settings_.work_dir + "/outputs/" + stdfs::path(ws).filename().string();
}

// The recipe's source in <ws>/src with its patches applied; errors say which step failed.
// Under the sandbox, git runs inside it (as the build user): the clone with the network
// and nothing of the host but the workspace, the patches and the commit date offline.
Result<std::string> AttemptContext::FetchAndPatch(LogShipper& log, const std::string& ws) {
  const auto& recipe = job_.recipe();
  std::string src = ws + "/src";
  log.Append(farm::v1::SYSTEM, "farm: fetching source (" + SourceText(recipe.source()) + ")");
  auto on_line = [&log, this](OutputStream s, const std::string& line) {
    log.Append(s == OutputStream::kStdout ? farm::v1::STDOUT : farm::v1::STDERR, line);
  };
  std::unique_ptr<ProcessRunner> offline = SourceRunner(ws, false);
  std::unique_ptr<ProcessRunner> online = SourceRunner(ws, true);
  StepRunner steps(*offline, ToolEnv(settings_.worker_env), control_.get(), on_line);
  const bool sandboxed = deps_.executor->Kind() == ExecutorKind::kSandbox;
  StepRunner git_steps(*online,
                       git::LockedGitEnv(settings_.git, sandboxed ? "/tmp" : "/nonexistent"),
                       control_.get(), on_line);
  GitFetch git{&git_steps, settings_.git};
  ArchiveFetcher fetch = [this](const farm::v1::SourceArchive& archive, const std::string& path) {
    return deps_.client->DownloadSource(job_.job_id(), job_.attempt(), archive, path);
  };
  if (Status s = FetchSource(steps, git, recipe.source(), src, fetch); !s.ok()) {
    return Status::FailedPrecondition("fetching source failed: " + s.message());
  }
  // An unpacked archive is the worker's; the sandboxed patch steps write into it.
  FARM_RETURN_IF_ERROR(sandbox::GiveToBuildUser(settings_.build_user, src, true));
  // Read before the patches: `git apply` gives the files it changes the time of the build.
  source_date_epoch_ = SourceDateEpoch(*offline, src);
  std::vector<farm::v1::Patch> patches(recipe.patches().begin(), recipe.patches().end());
  if (!patches.empty()) {
    log.Append(farm::v1::SYSTEM, "farm: applying " + std::to_string(patches.size()) + " patch(es)");
  }
  FARM_RETURN_IF_ERROR(ApplyPatches(steps, patches, src, ws + "/patches"));
  return src;
}

Result<std::vector<std::string>> AttemptContext::FetchArtifacts(
    LogShipper& log, const std::string& dir,
    const google::protobuf::RepeatedPtrField<farm::v1::Artifact>& artifacts) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir));
  std::vector<std::string> wheels;
  for (const farm::v1::Artifact& a : artifacts) {
    if (a.filename().empty() || a.filename().find('/') != std::string::npos ||
        a.filename()[0] == '.') {
      return Status::InvalidArgument("artifact " + std::to_string(a.id()) +
                                     " has the file name \"" + a.filename() + "\"");
    }
    std::string path = dir + "/" + a.filename();
    log.Append(farm::v1::SYSTEM,
               "farm: fetching " + a.filename() + " (" + std::to_string(a.size()) + " bytes)");
    FARM_RETURN_IF_ERROR(
        RetryUnavailable(*deps_.clock, RetryDeadlineMs(kReportRetryMs), deps_.client, [&] {
          return deps_.client->DownloadArtifact(job_.job_id(), job_.attempt(), a.id(), path);
        }));
    int64_t size = 0;
    FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileHex(path, &size));
    if (sha != a.sha256() || size != a.size()) {
      return Status::DataLoss(a.filename() + " arrived with sha256 " + sha + " and " +
                              std::to_string(size) + " bytes; farmd stored " + a.sha256() +
                              " and " + std::to_string(a.size()));
    }
    wheels.push_back(path);
  }
  return wheels;
}

Result<std::vector<std::string>> AttemptContext::DownloadWheels(LogShipper& log,
                                                                const std::string& dir) {
  FARM_ASSIGN_OR_RETURN(auto wheels, FetchArtifacts(log, dir, job_.artifacts()));
  if (wheels.empty()) return Status::FailedPrecondition("the validation job names no wheel");
  return wheels;
}

Status AttemptContext::FetchInputs(LogShipper& log, const std::string& ws) {
  inputs_ = InputWheels{.dir = ws + "/inputs"};
  for (const farm::v1::JobInput& input : job_.inputs()) {
    if (input.artifacts_size() == 0) {
      return Status::FailedPrecondition("required job " + std::to_string(input.job_id()) + " (" +
                                        input.recipe_name() + ") gave no wheel");
    }
    log.Append(farm::v1::SYSTEM,
               "farm: requires " + input.recipe_name() + " from job " +
                   std::to_string(input.job_id()) + " (build " + std::to_string(input.build_id()) +
                   ") for " +
                   (input.for_build() && input.for_validation() ? "build and validation"
                    : input.for_build()                         ? "the build"
                                                                : "validation"));
    FARM_ASSIGN_OR_RETURN(auto paths, FetchArtifacts(log, inputs_.dir, input.artifacts()));
    for (const std::string& p : paths) {
      if (input.for_build()) inputs_.for_build.push_back(p);
      if (input.for_validation()) inputs_.for_validation.push_back(p);
    }
  }
  return Status::Ok();
}

Result<farm::v1::ValidationReport> AttemptContext::Validate(
    LogShipper& log, const JobEnvInputs& env_in, const std::string& build_dir,
    const std::string& python, const std::vector<std::string>& wheels,
    const farm::v1::ArchManifest& manifest) {
  const farm::v1::ValidationSpec& spec = job_.recipe().validation();
  if (spec.script().empty() && spec.import_modules_size() == 0) {
    farm::v1::ValidationReport none;
    none.set_state(farm::v1::VALIDATION_NOT_RUN);
    none.set_message("the recipe asks for no validation");
    return none;
  }
  auto on_line = [&log, this](OutputStream s, const std::string& line) {
    log.Append(s == OutputStream::kStdout ? farm::v1::STDOUT : farm::v1::STDERR, line);
  };
  const bool on_host = deps_.executor->RunsOnHost();
  std::string where = on_host ? "" : " inside the " + deps_.executor->Name() + " container";
  // A provisioned cell is validated with its environment's torch: the clean venv sees the
  // environment's packages, as a user's venv holding that torch would.
  std::string over = job_.has_environment() ? " over the cell's environment" : "";
  log.Append(farm::v1::SYSTEM, "farm: validating in a clean venv" + over + where);
  // A fresh directory of the worker's, whatever the build left at <ws>/validate.
  const std::string ws = stdfs::path(env_in.wheel_dir).parent_path().string();
  FARM_ASSIGN_OR_RETURN(std::string dir, MakeFreshDir(ws, "validate"));
  FARM_RETURN_IF_ERROR(sandbox::GiveToBuildUser(settings_.build_user, dir, false));
  ValidationInputs in{.job = &job_,
                      .wheels = wheels,
                      .manifest = manifest,
                      .python = python,
                      .sees_python_packages = job_.has_environment(),
                      .dir = dir,
                      .build_dir = build_dir,
                      .find_links = settings_.find_links,
                      .caps = settings_.caps,
                      .worker_id = settings_.worker_id};
  JobEnvInputs venv_in = env_in;
  venv_in.venv_dir = in.dir + "/venv";
  in.env = BuildJobEnv(venv_in);
  // Where the wheels are: the worker's copies outside the workspace (mounted read-only
  // for a sandbox or container), or the wheels a validation job fetched.
  if (!wheels.empty()) in.find_links.push_back(stdfs::path(wheels.front()).parent_path().string());
  in.required_wheels = inputs_.for_validation;
  if (!inputs_.for_validation.empty()) in.find_links.push_back(inputs_.dir);
  // The job's executor decides where validation runs: on the host for native jobs, else
  // each step in one container of the recipe's image, GPUs as for the build, offline.
  std::unique_ptr<ProcessRunner> runner = MakeValidationRunner(
      *deps_.executor, *deps_.runner, ValidationContainer(in, job_.recipe().container_image()));
  StepRunner steps(*runner, BaseEnv(settings_.worker_env), control_.get(), on_line);
  FARM_ASSIGN_OR_RETURN(auto report, ValidateWheels(steps, *runner, control_.get(), on_line, in));
  log.Append(farm::v1::SYSTEM, "farm: validation " +
                                   farm::v1::ValidationState_Name(report.state()) + ": " +
                                   report.message());
  return report;
}

}  // namespace farm::agent
