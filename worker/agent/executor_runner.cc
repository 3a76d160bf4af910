#include "worker/agent/executor_runner.h"

namespace farm::agent {

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

}  // namespace farm::agent
