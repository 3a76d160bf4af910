#include "worker/job/job_runner.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "common/wheel/job_check.h"
#include "common/wheel/wheel_bytes.h"
#include "worker/agent/retry.h"
#include "worker/exec/executor_runner.h"
#include "worker/exec/sandbox_executor.h"
#include "worker/exec/untrusted_dir.h"
#include "worker/job/job_outcome.h"
#include "worker/job/torch_pin.h"
#include "worker/job/wheel_label.h"
#include "worker/job/workspace.h"
#include "worker/validate/validation.h"
#include "worker/validate/validation_attempt.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;
using farm::v1::LogStream;

constexpr int64_t kReportRetryMs = 5 * 60 * 1000;
constexpr int64_t kShutdownRetryMs = 8000;
// The largest wheel the worker copies out of a workspace (farmd's own limit is lower).
constexpr int64_t kMaxWheelBytes = int64_t{16} << 30;

std::string JobName(const farm::v1::JobAssignment& job) {
  return "job " + std::to_string(job.job_id()) + " attempt " + std::to_string(job.attempt());
}

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

JobRunner::JobRunner(JobDeps deps, JobSettings settings, farm::v1::JobAssignment job,
                     std::shared_ptr<JobControl> control)
    : deps_(std::move(deps)),
      settings_(std::move(settings)),
      job_(std::move(job)),
      control_(std::move(control)) {}

int64_t JobRunner::RetryDeadlineMs(int64_t normal_ms) const {
  bool stopping = settings_.shutting_down != nullptr && settings_.shutting_down->load();
  return deps_.clock->SteadyMs() + (stopping ? kShutdownRetryMs : normal_ms);
}

Outcome JobRunner::StoppedOutcome(Outcome base) const {
  base.cause = control_->cause();
  base.detail = control_->detail();
  return base;
}

Outcome JobRunner::Run() {
  FarmLogSink sink(*deps_.client);
  LogShipperOptions log_options;
  log_options.max_buffered_bytes = static_cast<size_t>(settings_.log_buffer_bytes);
  log_options.published_seq = &control_->log_seq;  // every line, build output included
  LogShipper log(sink, *deps_.clock, job_.job_id(), job_.attempt(), log_options);
  log.Start();
  log::Info("starting " + JobName(job_) + " of build " + std::to_string(job_.build_id()));
  Outcome outcome;
  std::string ws;
  auto made = fs::MakeTempDir(settings_.work_dir, "job-" + std::to_string(job_.job_id()) + "-a" +
                                                      std::to_string(job_.attempt()) + "-");
  if (!made.ok()) {
    outcome = Infra("cannot create workspace: " + made.status().message());
  } else if (Status given = sandbox::GiveToBuildUser(settings_.build_user, *made, false);
             !given.ok()) {
    ws = *made;
    outcome = Infra(given.message());
  } else {
    ws = *made;
    outcome = Execute(log, ws);
  }
  if (control_->stopped() && outcome.cause != control_->cause()) outcome = StoppedOutcome(outcome);
  log.Append(farm::v1::SYSTEM,
             "farm: attempt ended: " + farm::v1::AttemptCause_Name(outcome.cause) +
                 (outcome.detail.empty() ? "" : " (" + outcome.detail + ")"));
  Status flushed = log.Finish(RetryDeadlineMs(60000));
  if (!flushed.ok()) log::Warn(JobName(job_) + ": log upload incomplete: " + flushed.ToString());
  Report(outcome, log.last_seq());
  if (!ws.empty() && !settings_.keep_workspace) {
    for (const std::string& dir : {ws, OutputDir(ws)}) {
      Status removed = fs::RemoveAll(dir);
      if (!removed.ok()) log::Warn("removing workspace: " + removed.ToString());
    }
  }
  return outcome;
}

Outcome JobRunner::Execute(LogShipper& log, const std::string& ws) {
  auto system = [&log, this](const std::string& text) {
    log.Append(farm::v1::SYSTEM, "farm: " + text);
  };
  system("workspace " + ws);
  for (const std::string& line : job_.cell_settings()) system("cell settings: " + line);
  if (job_.kind() == farm::v1::JOB_VALIDATE) return ValidationAttempt(*this).Run(log, ws);
  auto src = FetchAndPatch(log, ws);
  if (!src.ok()) return Infra(src.status().message());
  auto built = Build(log, ws, *src);
  if (!built.ok()) return Infra(built.status().message());
  return *built;
}

std::unique_ptr<ProcessRunner> JobRunner::SourceRunner(const std::string& ws, bool network) const {
  if (deps_.executor->Kind() != ExecutorKind::kSandbox) return ForwardTo(*deps_.runner);
  ExecRequest base;
  base.workspace = ws;
  base.network = network;
  base.kill_grace_ms = kKillGraceMs;
  if (!settings_.git.ca_file.empty()) base.host_read_paths.push_back(settings_.git.ca_file);
  return std::make_unique<ExecutorProcessRunner>(*deps_.executor, std::move(base));
}

std::string JobRunner::OutputDir(const std::string& ws) const {
  return settings_.work_dir + "/outputs/" + stdfs::path(ws).filename().string();
}

// The recipe's source in <ws>/src with its patches applied; errors say which step failed.
// Under the sandbox, git runs inside it (as the build user): the clone with the network
// and nothing of the host but the workspace, the patches and the commit date offline.
Result<std::string> JobRunner::FetchAndPatch(LogShipper& log, const std::string& ws) {
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

Result<std::vector<std::string>> JobRunner::FetchArtifacts(
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

Result<std::vector<std::string>> JobRunner::DownloadWheels(LogShipper& log,
                                                           const std::string& dir) {
  FARM_ASSIGN_OR_RETURN(auto wheels, FetchArtifacts(log, dir, job_.artifacts()));
  if (wheels.empty()) return Status::FailedPrecondition("the validation job names no wheel");
  return wheels;
}

Status JobRunner::FetchInputs(LogShipper& log, const std::string& ws) {
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

Status JobRunner::InstallBuildInputs(LogShipper& log, StepRunner& steps, const std::string& venv) {
  if (inputs_.for_build.empty()) return Status::Ok();
  log.Append(farm::v1::SYSTEM, "farm: installing " + std::to_string(inputs_.for_build.size()) +
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
                                   inputs_.dir};
  argv.insert(argv.end(), inputs_.for_build.begin(), inputs_.for_build.end());
  Status installed = steps.Run(argv, inputs_.dir, kInstallTimeoutMs);
  if (!installed.ok()) return installed.WithContext("installing the required wheels");
  return Status::Ok();
}

// Checks every wheel, validates them together, uploads them and says how the attempt
// ended. Wheels that fail validation are still uploaded (with their report) so people can
// inspect them; their job fails and nothing publishes or indexes them.
Outcome JobRunner::FinishWheels(LogShipper& log, const JobEnvInputs& env_in,
                                const std::string& build_dir, const std::string& python,
                                Outcome built) {
  // The build's wheel directory is hostile: its wheels are copied out (never a link, a
  // FIFO or a file elsewhere), and only the copies are checked, validated and uploaded.
  const std::string ws = stdfs::path(env_in.wheel_dir).parent_path().string();
  const std::string out_dir = OutputDir(ws);
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
  auto report = Validate(log, env_in, build_dir, python, wheels, device_manifest);
  if (control_->stopped()) return StoppedOutcome(built);
  if (!report.ok()) return Infra("validation could not run: " + report.status().message());
  built.validation = std::move(report).value();
  for (size_t i = 0; i < wheels.size(); ++i) {
    if (control_->stopped()) return StoppedOutcome(built);
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
Result<farm::v1::ArtifactHeader> JobRunner::CheckOne(LogShipper& log, const std::string& path) {
  farm::v1::ArtifactHeader header;
  header.set_job_id(job_.job_id());
  header.set_attempt(job_.attempt());
  header.set_filename(stdfs::path(path).filename().string());
  int64_t size = 0;
  FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileHex(path, &size));
  header.set_size(size);
  header.set_sha256(sha);
  if (!deps_.wheel_hook) return header;
  Status checked = deps_.wheel_hook(job_, path, &header);
  // Where the bytes go, failed or not: a wheel over its size_budget fails right here.
  std::istringstream bytes(wheel::FormatWheelBytes(header.manifest(), "  "));
  for (std::string line; std::getline(bytes, line);) {
    log.Append(farm::v1::SYSTEM, "farm: " + header.filename() + ": " + line);
  }
  if (!checked.ok()) return Status::Aborted(header.filename() + ": " + checked.message());
  log.Append(farm::v1::SYSTEM,
             "farm: " + header.filename() + ": " + DescribeManifest(header.manifest()));
  std::string ignored = wheel::ArchListIgnoredMessage(job_.cell().arch_list(), header.manifest());
  if (!ignored.empty()) {
    log.Append(farm::v1::SYSTEM, "farm: warning: " + header.filename() + ": " + ignored);
  }
  return header;
}

// Puts the wheel's identity into its name (wheel_label.h) and leaves the labelled wheel
// in the wheel directory in place of the one the build wrote.
Result<farm::v1::ArtifactHeader> JobRunner::Label(LogShipper& log, const std::string& path,
                                                  const farm::v1::ArtifactHeader& header) {
  const std::string wheel_dir = stdfs::path(path).parent_path().string();
  const std::string out_dir = wheel_dir + "/labelled";
  FARM_ASSIGN_OR_RETURN(std::string torch,
                        TorchRequirementForJob(job_, settings_.caps, provisioned_torch_));
  FARM_ASSIGN_OR_RETURN(LabelledWheel labelled,
                        LabelWheelForJob(job_, path, header, out_dir, torch));
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

Result<farm::v1::ValidationReport> JobRunner::Validate(LogShipper& log, const JobEnvInputs& env_in,
                                                       const std::string& build_dir,
                                                       const std::string& python,
                                                       const std::vector<std::string>& wheels,
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

Status JobRunner::UploadOne(LogShipper& log, const std::string& path,
                            farm::v1::ArtifactHeader header) {
  log.Append(farm::v1::SYSTEM, "farm: uploading " + header.filename() + " (" +
                                   std::to_string(header.size()) + " bytes, sha256 " +
                                   header.sha256() + ")");
  auto uploaded = RetryUnavailable(*deps_.clock, RetryDeadlineMs(kReportRetryMs), deps_.client,
                                   [&] { return deps_.client->UploadArtifact(header, path); });
  return uploaded.status();
}

void JobRunner::Report(const Outcome& outcome, int64_t last_seq) {
  farm::v1::CompleteJobRequest req;
  req.set_job_id(job_.job_id());
  req.set_attempt(job_.attempt());
  req.set_exit_code(outcome.exit_code);
  req.set_cause(outcome.cause);
  req.set_detail(ToValidUtf8(outcome.detail));  // may quote file names or output
  req.set_peak_rss_bytes(outcome.peak_rss_bytes);
  req.set_last_log_seq(last_seq);
  *req.mutable_validation() = outcome.validation;
  if (outcome.compile_cache) *req.mutable_compile_cache() = *outcome.compile_cache;
  auto done = RetryUnavailable(*deps_.clock, RetryDeadlineMs(kReportRetryMs), deps_.client,
                               [&] { return deps_.client->CompleteJob(req); });
  std::string what = JobName(job_) + " ended " + farm::v1::AttemptCause_Name(outcome.cause) +
                     (outcome.detail.empty() ? "" : " (" + outcome.detail + ")");
  if (done.ok()) {
    control_->reported = true;
    log::Info(what + "; farmd says " + farm::v1::JobState_Name(done->state()));
  } else {
    log::Warn(what + "; reporting it failed: " + done.status().ToString());
  }
}

}  // namespace farm::agent
