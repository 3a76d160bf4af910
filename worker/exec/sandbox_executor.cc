#include "worker/exec/sandbox_executor.h"

namespace farm::agent {

sandbox::Request ToSandboxRequest(const ExecRequest& request) {
  sandbox::Request r;
  r.argv = request.argv;
  r.cwd = request.cwd;
  r.env = request.env;
  r.workspace = request.workspace;
  for (const ExecMount& m : request.mounts) r.mounts.push_back({m.path, m.read_only});
  r.host_read_paths = request.host_read_paths;
  r.read_only_in_workspace = request.read_only_in_workspace;
  r.network = request.network && !request.offline;
  return r;
}

Result<std::unique_ptr<Process>> SandboxExecutor::Start(const ExecRequest& request) {
  sandbox::Request r = ToSandboxRequest(request);
  ProcessSpec spec;
  spec.argv = sandbox::Command(options_, r);
  // bwrap hands its environment to the command: passed this way, not on bwrap's command
  // line, where every user of the host could read it.
  spec.env = sandbox::Env(r);
  spec.clear_env = true;
  spec.kill_grace_ms = request.kill_grace_ms;
  return runner_.Start(spec);
}

}  // namespace farm::agent
