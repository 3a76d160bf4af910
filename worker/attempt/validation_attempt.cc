#include "worker/attempt/validation_attempt.h"

#include "common/fs.h"
#include "worker/job/workspace.h"

namespace farm::agent {

std::variant<ValidationAttempt::Interpreter, Outcome> ValidationAttempt::ProbedInterpreter() const {
  const farm::v1::JobAssignment& job = ctx_.job();
  auto python = SelectPython(job.cell(), ctx_.settings().caps);
  if (!python.ok()) return Infra(python.status().message());
  // Validation compiles nothing: a toolkit of the cell's CUDA only sets CUDA_HOME if here.
  auto toolkit = SelectToolkit(job.cell(), ctx_.settings().caps);
  return Interpreter{python->path(), python->version(),
                     toolkit.ok() ? *toolkit : farm::v1::CudaToolkit()};
}

std::variant<ValidationAttempt::Interpreter, Outcome> ValidationAttempt::ProvisionedInterpreter(
    LogShipper& log, const std::string& ws) {
  auto made = ctx_.ProvisionEnvironment(log, ws);
  if (!made.ok()) return ctx_.ProvisioningOutcome(made.status());
  provisioned_ = std::move(made).value();
  log.Append(farm::v1::SYSTEM,
             "farm: validating with the cell's environment: " + provisioned_->venv_dir +
                 " (torch " + provisioned_->torch + ", base " + provisioned_->base_python + ")");
  return Interpreter{provisioned_->python, ctx_.job().environment().python(), {}};
}

Outcome ValidationAttempt::Run(LogShipper& log, const std::string& ws) {
  const farm::v1::JobAssignment& job = ctx_.job();
  const JobSettings& settings = ctx_.settings();
  JobControl& control = ctx_.control();
  const farm::v1::MatrixCell& cell = job.cell();
  log.Append(farm::v1::SYSTEM, "farm: validating the " + std::to_string(job.artifacts_size()) +
                                   " wheel(s) of an earlier build on this worker's GPU" +
                                   (cell.torch().empty() ? "" : ", with torch " + cell.torch()));
  std::string build_dir = ws;
  const farm::v1::ValidationSpec& spec = job.recipe().validation();
  if (!spec.script().empty() && spec.script_content().empty()) {  // the script is in the source
    auto src = ctx_.FetchAndPatch(log, ws);
    if (!src.ok()) return Infra(src.status().message());
    auto dir = BuildDir(*src, job.recipe());
    if (!dir.ok()) return RecipeError(dir.status().message());
    build_dir = *dir;
  }
  std::variant<Interpreter, Outcome> python;
  if (!job.has_environment()) {
    python = ProbedInterpreter();
    if (auto* ended = std::get_if<Outcome>(&python)) return *ended;
  }
  auto wheels = ctx_.DownloadWheels(log, ws + "/wheels");
  if (control.stopped()) return ctx_.StoppedOutcome({});
  if (!wheels.ok()) return Infra("fetching the wheels failed: " + wheels.status().message());
  if (Status s = ctx_.FetchInputs(log, ws); !s.ok()) {
    return Infra("fetching the required wheels failed: " + s.message());
  }
  if (Status s = fs::MakeDirs(ws + "/tmp"); !s.ok()) return Infra(s.message());
  // The validation steps run as the build user and write into the workspace; given before
  // an environment is cloned in, whose files are links to the sealed snapshot.
  if (Status s = sandbox::GiveToBuildUser(settings.build_user, ws, true); !s.ok()) {
    return Infra(s.message());
  }
  if (job.has_environment()) {
    python = ProvisionedInterpreter(log, ws);
    if (auto* ended = std::get_if<Outcome>(&python)) return *ended;
  }
  const Interpreter& interpreter = std::get<Interpreter>(python);
  farm::v1::ArchManifest manifest;
  for (const auto& a : job.artifacts()) {
    if (a.manifest().images_size() > 0) manifest = a.manifest();
  }
  JobEnvInputs in{.job = &job,
                  .worker_env = settings.worker_env,
                  .venv_dir = ws + "/venv",
                  .wheel_dir = ws + "/wheels",
                  .tmp_dir = ws + "/tmp",
                  .python_version = interpreter.version,
                  .toolkit = interpreter.toolkit,
                  .cores = settings.caps.cpu_cores(),
                  .available_memory_bytes = ctx_.deps().probe->AvailableMemoryBytes(),
                  .secrets = settings.secrets};
  auto report = ctx_.Validate(log, in, build_dir, interpreter.path, *wheels, manifest);
  Outcome out{farm::v1::CAUSE_COMPLETED, "", 0, 0};
  if (control.stopped()) return ctx_.StoppedOutcome(out);
  if (!report.ok()) return Infra("validation could not run: " + report.status().message());
  out.validation = std::move(report).value();
  if (out.validation.state() == farm::v1::VALIDATION_FAILED) {
    out.cause = farm::v1::CAUSE_VALIDATION_FAILED;
    out.detail = "validation failed: " + out.validation.message();
  }
  return out;
}

}  // namespace farm::agent
