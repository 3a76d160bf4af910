#include "worker/validate/validation.h"

#include <filesystem>

#include "common/fs.h"
#include "common/wheel/job_check.h"
#include "worker/exec/untrusted_dir.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

constexpr int64_t kImportTimeoutMs = 5 * 60 * 1000;
constexpr int64_t kMaxReportBytes = 16 << 20;

// Imports the module the way a user would, and says where it came from, so the log shows
// that the installed copy (not the source tree) was imported, by which base interpreter
// and on which host (a container's host name is its name).
constexpr const char* kImportProgram =
    "import importlib, os, platform, sys\n"
    "m = importlib.import_module(sys.argv[1])\n"
    "print('farm: imported', m.__name__, 'from', getattr(m, '__file__', None),\n"
    "      '(Python %s at %s on host %s)' % (platform.python_version(),\n"
    "      os.path.realpath(sys.executable), platform.node()))\n";

farm::v1::ValidationReport Report(farm::v1::ValidationState state, const std::string& message) {
  farm::v1::ValidationReport report;
  report.set_state(state);
  report.set_message(message);
  return report;
}

// The script the recipe names: written out when it came with the recipe, else found in the
// source tree (and it must stay inside it).
Result<std::string> ScriptPath(const ValidationInputs& in) {
  const farm::v1::ValidationSpec& spec = in.job->recipe().validation();
  stdfs::path rel = stdfs::path(spec.script()).lexically_normal();
  if (rel.is_absolute() || rel.empty() || *rel.begin() == "..") {
    return Status::InvalidArgument("validation script " + spec.script() +
                                   " must be a relative path inside the source tree");
  }
  if (!spec.script_content().empty()) {
    std::string path = in.dir + "/" + rel.filename().string();
    FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(path, spec.script_content()));
    return path;
  }
  std::string path = in.build_dir + "/" + rel.string();
  if (!stdfs::is_regular_file(path)) {
    return Status::NotFound("validation script " + spec.script() + " is not in the source tree");
  }
  return path;
}

std::vector<std::string> InstallArgv(const std::string& python, const ValidationInputs& in) {
  std::vector<std::string> argv = {
      python,      "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check",
      "--no-input"};
  for (const std::string& dir : in.find_links) {
    argv.push_back("--find-links");
    argv.push_back(dir);
  }
  argv.insert(argv.end(), in.wheels.begin(), in.wheels.end());
  argv.insert(argv.end(), in.required_wheels.begin(), in.required_wheels.end());
  for (const std::string& r : in.job->recipe().validation().runtime_requirements()) {
    argv.push_back(r);
  }
  return argv;
}

std::vector<std::string> ScriptArgv(const std::string& python, const std::string& script,
                                    const farm::v1::Gpu& gpu, const ValidationInputs& in) {
  const farm::v1::ValidationSpec& spec = in.job->recipe().validation();
  auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  std::vector<std::string> argv = {python,     script,
                                   "--device", "cuda:" + std::to_string(gpu.index()),
                                   "--report", in.dir + "/report.json"};
  if (spec.min_cosine() > 0) argv.insert(argv.end(), {"--min-cosine", number(spec.min_cosine())});
  if (spec.max_relative_l1() > 0) {
    argv.insert(argv.end(), {"--max-relative-l1", number(spec.max_relative_l1())});
  }
  return argv;
}

// Runs the script and reads its report. Cancelled when the job was stopped meanwhile.
Result<farm::v1::ValidationReport> RunScript(ProcessRunner& runner, JobControl* control,
                                             const LineCallback& on_line,
                                             const std::vector<std::string>& argv,
                                             const ValidationInputs& in) {
  ProcessSpec spec{.argv = argv, .cwd = in.dir, .env = in.env, .clear_env = true};
  FARM_ASSIGN_OR_RETURN(auto process, runner.Start(spec));
  if (control != nullptr) control->SetProcess(process.get());
  ProcessResult r = process->Wait(on_line, in.timeout_ms);
  if (control != nullptr) control->SetProcess(nullptr);
  if (control != nullptr && control->stopped()) return Status::Cancelled(control->detail());
  if (r.timed_out) {
    return Report(farm::v1::VALIDATION_FAILED, "validation script timed out after " +
                                                   std::to_string(in.timeout_ms / 1000) + " s");
  }
  // The script wrote the report where it could write anything: read beneath the workspace,
  // never through a link, only a regular file of bounded size; else there is no report.
  std::string json;
  auto ws = UntrustedDir::Open(stdfs::path(in.dir).parent_path().string());
  if (ws.ok()) {
    Result<std::string> text =
        ws->ReadFile(stdfs::path(in.dir).filename().string() + "/report.json", kMaxReportBytes);
    if (text.ok()) json = std::move(text).value();
  }
  return ParseValidationReport(json, r.exit_code);
}

}  // namespace

Status CheckWheelForJob(const farm::v1::JobAssignment& job, const std::string& wheel_path,
                        farm::v1::ArtifactHeader* header) {
  wheel::InspectOptions options = wheel::JobCheckOptions(job.recipe());
  FARM_ASSIGN_OR_RETURN(wheel::JobWheelCheck check,
                        wheel::CheckJobWheel(wheel_path, header->filename(), job.cell(), options));
  *header->mutable_manifest() = check.manifest;
  if (!check.ok()) return Status::FailedPrecondition(check.Summary());
  return Status::Ok();
}

Result<farm::v1::ValidationReport> ValidateWheels(StepRunner& steps, ProcessRunner& runner,
                                                  JobControl* control, const LineCallback& on_line,
                                                  const ValidationInputs& in) {
  const farm::v1::Recipe& recipe = in.job->recipe();
  const std::string venv = in.dir + "/venv";
  const std::string python = venv + "/bin/python";
  FARM_RETURN_IF_ERROR(fs::MakeDirs(in.dir));
  // Written before any code of the recipe runs here (the imports below run it), so
  // nothing the recipe left in this directory is followed by the worker's write.
  std::optional<Result<std::string>> script;
  if (!recipe.validation().script().empty()) script = ScriptPath(in);
  FARM_RETURN_IF_ERROR(
      CreateVenv(steps, in.python, recipe.system_site_packages() || in.sees_python_packages, venv));
  Status installed = steps.Run(InstallArgv(python, in), in.dir, kInstallTimeoutMs);
  if (installed.code() == StatusCode::kCancelled) return installed;
  if (!installed.ok()) {
    return Report(farm::v1::VALIDATION_FAILED, "clean-room install failed: " + installed.message());
  }
  for (const std::string& module : recipe.validation().import_modules()) {
    Status imported = steps.Run({python, "-c", kImportProgram, module}, in.dir, kImportTimeoutMs);
    if (imported.code() == StatusCode::kCancelled) return imported;
    if (!imported.ok()) {
      return Report(farm::v1::VALIDATION_FAILED,
                    "import " + module + " failed in a clean venv: " + imported.message());
    }
  }
  std::string imports = recipe.validation().import_modules_size() == 0
                            ? "installed in a clean venv"
                            : "installed and imported in a clean venv";
  if (recipe.validation().script().empty()) {
    return Report(farm::v1::VALIDATION_NOT_RUN,
                  imports + "; the recipe names no validation script");
  }
  std::optional<farm::v1::Gpu> gpu = ChooseValidationGpu(in.caps, in.manifest);
  if (!gpu) {
    farm::v1::ValidationReport pending = Report(farm::v1::VALIDATION_PENDING_HARDWARE,
                                                imports + "; " + NoGpuReason(in.caps, in.manifest));
    pending.set_worker_id(in.worker_id);
    return pending;
  }
  if (!script->ok()) return Report(farm::v1::VALIDATION_FAILED, script->status().message());
  FARM_ASSIGN_OR_RETURN(
      farm::v1::ValidationReport report,
      RunScript(runner, control, on_line, ScriptArgv(python, **script, *gpu, in), in));
  report.set_worker_id(in.worker_id);
  if (report.gpu_name().empty()) report.set_gpu_name(gpu->name());
  ApplySpeedThreshold(recipe.validation().min_speedup(), &report);
  ApplyFastPathRequirement(recipe.validation().require_fast_path(), &report);
  return report;
}

}  // namespace farm::agent
