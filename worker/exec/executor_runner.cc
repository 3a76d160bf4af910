#include "worker/exec/executor_runner.h"

namespace farm::agent {
namespace {

// Hands every spec to the host's runner unchanged.
class HostRunner final : public ProcessRunner {
 public:
  explicit HostRunner(ProcessRunner& host) : host_(host) {}
  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override {
    return host_.Start(spec);
  }

 private:
  ProcessRunner& host_;
};

}  // namespace

Result<std::unique_ptr<Process>> ExecutorProcessRunner::Start(const ProcessSpec& spec) {
  if (!spec.stdin_data.empty()) {
    return Status::InvalidArgument("a process run through the " + executor_.Name() +
                                   " executor gets no standard input");
  }
  if (!spec.clear_env) {
    return Status::InvalidArgument("a process run through the " + executor_.Name() +
                                   " executor needs its complete environment");
  }
  ExecRequest req = base_;
  req.argv = spec.argv;
  req.cwd = spec.cwd;
  for (const auto& [k, v] : spec.env) req.env[k] = v;  // over base's (the job's identity)
  req.kill_grace_ms = spec.kill_grace_ms;
  return executor_.Start(req);
}

std::unique_ptr<ProcessRunner> ForwardTo(ProcessRunner& host) {
  return std::make_unique<HostRunner>(host);
}

std::unique_ptr<ProcessRunner> MakeValidationRunner(Executor& executor, ProcessRunner& host,
                                                    ExecRequest base) {
  if (executor.RunsOnHost()) return ForwardTo(host);
  base.offline = true;
  return std::make_unique<ExecutorProcessRunner>(executor, std::move(base));
}

Result<bool> HasExecutable(Executor& executor, ExecRequest base, const std::string& path,
                           int64_t timeout_ms) {
  base.argv = {"test", "-x", path};
  if (base.cwd.empty()) base.cwd = base.workspace;
  base.offline = true;
  FARM_ASSIGN_OR_RETURN(auto process, executor.Start(base));
  ProcessResult r = process->Wait(nullptr, timeout_ms);
  if (r.timed_out) return Status::DeadlineExceeded("test -x " + path + " timed out");
  // test(1) answers 0 or 1; anything else is the engine's (125: it could not run the
  // container, 126/127: no test in the image).
  if (r.exit_code == 0 || r.exit_code == 1) return r.exit_code == 0;
  return Status::Unavailable("test -x " + path + " through the " + executor.Name() +
                             " executor exited with code " + std::to_string(r.exit_code));
}

}  // namespace farm::agent
