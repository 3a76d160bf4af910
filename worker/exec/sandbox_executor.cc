#include "worker/exec/sandbox_executor.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

bool Under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

std::string Resolved(const std::string& path) {
  std::error_code ec;
  stdfs::path p = stdfs::canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace

std::string ToSandboxPath(const std::string& text, const std::string& workspace) {
  if (workspace.empty()) return text;
  std::string out;
  size_t pos = 0;
  for (size_t hit = text.find(workspace); hit != std::string::npos;
       hit = text.find(workspace, pos)) {
    size_t end = hit + workspace.size();
    bool whole = end == text.size() || text[end] == '/' || text[end] == ':' || text[end] == ' ' ||
                 text[end] == '=' || text[end] == '"' || text[end] == '\'';
    out.append(text, pos, hit - pos);
    out += whole ? kSandboxJobRoot : workspace;
    pos = end;
  }
  return out + text.substr(pos);
}

std::vector<std::string> PythonReadPaths(const std::string& python) {
  std::vector<std::string> out;
  if (python.empty()) return out;
  auto add = [&out](const stdfs::path& bin_dir) {
    std::string prefix = Resolved(bin_dir.parent_path().string());
    if (!prefix.empty() && prefix != "/" &&
        std::find(out.begin(), out.end(), prefix) == out.end()) {
      out.push_back(prefix);
    }
  };
  stdfs::path exe(python);
  add(exe.parent_path());                            // a venv's own prefix (symlinks kept)
  add(stdfs::path(Resolved(python)).parent_path());  // where the interpreter really is
  std::ifstream cfg(exe.parent_path().parent_path() / "pyvenv.cfg");
  for (std::string line; std::getline(cfg, line);) {
    if (line.rfind("home", 0) != 0) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string home = line.substr(eq + 1);
    home.erase(0, home.find_first_not_of(" \t"));
    while (!home.empty() && (home.back() == ' ' || home.back() == '\r')) home.pop_back();
    if (!home.empty()) add(stdfs::path(home));
  }
  return out;
}

namespace {

// The bind mounts of a sandbox's command line. Under a build user, the directories bwrap
// makes on the way to a mount point (root's and mode 0700) are made 0755 first, so that
// the build user can reach what is mounted there (/farm/job, the cache, the tools).
class Binds {
 public:
  Binds(const SandboxOptions& o, std::vector<std::string>& argv) : o_(o), a_(argv) {}

  void Add(const char* flag, const std::string& src, const std::string& dest) {
    if (o_.build_user.switches) Parents(dest);
    a_.insert(a_.end(), {flag, src, dest});
  }

 private:
  // Directories that exist already in every sandbox (and must keep their modes); what
  // lies under /tmp (a fresh tmpfs) does not.
  bool Given(const std::string& dir) const {
    if (dir == "/tmp") return true;
    for (const char* fixed : {"/proc", "/dev", "/etc"}) {
      if (Under(dir, fixed)) return true;
    }
    return std::any_of(o_.system_dirs.begin(), o_.system_dirs.end(),
                       [&dir](const std::string& d) { return Under(dir, d); });
  }
  void Parents(const std::string& dest) {
    std::vector<std::string> chain;
    for (stdfs::path p = stdfs::path(dest).parent_path(); p.has_relative_path();
         p = p.parent_path()) {
      chain.push_back(p.string());
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (Given(*it) || !made_.insert(*it).second) continue;
      a_.insert(a_.end(), {"--perms", "0755", "--dir", *it});
    }
  }

  const SandboxOptions& o_;
  std::vector<std::string>& a_;
  std::set<std::string> made_;
};

}  // namespace

std::vector<std::string> SandboxCommand(const SandboxOptions& o, const ExecRequest& r) {
  std::vector<std::string> a = {o.bwrap,
                                "--die-with-parent",
                                "--new-session",
                                "--unshare-pid",
                                "--unshare-ipc",
                                "--unshare-uts",
                                "--unshare-cgroup-try",
                                "--cap-drop",
                                "ALL"};
  const bool switches = o.build_user.switches;
  // Only what it takes to reach the working directory (the build user's, which root
  // without capabilities may not enter) and for setpriv to become the build user; setpriv
  // drops them all again before the command starts.
  if (switches) {
    a.insert(a.end(), {"--cap-add", "CAP_DAC_READ_SEARCH", "--cap-add", "CAP_SETUID", "--cap-add",
                       "CAP_SETGID", "--cap-add", "CAP_SETPCAP"});
  }
  if (r.offline || !r.network) a.push_back("--unshare-net");
  for (const auto& d : o.system_dirs) a.insert(a.end(), {"--ro-bind-try", d, d});
  a.insert(a.end(), {"--ro-bind", o.etc, "/etc"});
  for (const auto& hidden : o.etc_hidden) {
    a.insert(a.end(), {"--tmpfs", "/etc/" + stdfs::path(hidden).filename().string()});
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  // The build user must be able to write /tmp (its HOME), which root mounts.
  if (switches) a.insert(a.end(), {"--perms", "01777"});
  a.insert(a.end(), {"--tmpfs", "/tmp"});
  for (const auto& dev : o.devices) a.insert(a.end(), {"--dev-bind-try", dev, dev});
  Binds binds(o, a);
  for (const auto& p : r.host_read_paths) {
    bool covered = std::any_of(o.system_dirs.begin(), o.system_dirs.end(),
                               [&p](const std::string& d) { return Under(p, d); });
    if (!covered) binds.Add("--ro-bind-try", p, p);
  }
  for (const auto& m : r.mounts)
    binds.Add(m.read_only ? "--ro-bind-try" : "--bind-try", m.path, m.path);
  if (!r.workspace.empty()) {
    binds.Add("--bind", r.workspace, r.workspace);
    binds.Add("--bind", r.workspace, kSandboxJobRoot);
  }
  if (!r.cwd.empty()) a.insert(a.end(), {"--chdir", ToSandboxPath(r.cwd, r.workspace)});
  a.push_back("--");
  if (switches) {
    a.insert(a.end(), {o.setpriv, "--reuid=" + std::to_string(o.build_user.uid),
                       "--regid=" + std::to_string(o.build_user.gid), "--clear-groups",
                       "--inh-caps=-all", "--bounding-set=-all", "--"});
  }
  for (const auto& arg : r.argv) a.push_back(ToSandboxPath(arg, r.workspace));
  return a;
}

SandboxOptions DetectSandboxOptions(const std::string& bwrap) {
  SandboxOptions o;
  o.bwrap = bwrap;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator("/dev", ec)) {
    std::string name = e.path().filename().string();
    // /dev/dxg is WSL2's GPU: its CUDA driver reaches the Windows driver through it.
    if (name.rfind("nvidia", 0) == 0 || name == "dxg") o.devices.push_back(e.path().string());
  }
  std::sort(o.devices.begin(), o.devices.end());
  for (const auto& e : stdfs::directory_iterator(o.etc, ec)) {
    if (e.path().filename().string().rfind("farm", 0) == 0 && e.is_directory(ec)) {
      o.etc_hidden.push_back(e.path().string());
    }
  }
  return o;
}

Status CheckSandbox(ProcessRunner& runner, const SandboxOptions& options) {
  ExecRequest probe;
  probe.argv = {"true"};
  ProcessSpec spec;
  spec.argv = SandboxCommand(options, probe);
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.clear_env = true;
  auto out = RunAndCapture(runner, spec, 30'000);
  if (!out.ok()) return out.status();
  if (out->result.exit_code != 0) {
    return Status::FailedPrecondition("bubblewrap cannot make a sandbox here (exit " +
                                      std::to_string(out->result.exit_code) + "): " + out->err);
  }
  return Status::Ok();
}

std::map<std::string, std::string> SandboxEnv(const ExecRequest& request) {
  std::map<std::string, std::string> env;
  for (const auto& [key, value] : request.env) env[key] = ToSandboxPath(value, request.workspace);
  env["HOME"] = "/tmp";  // the worker's home does not exist in the sandbox
  return env;
}

Result<std::unique_ptr<Process>> SandboxExecutor::Start(const ExecRequest& request) {
  ProcessSpec spec;
  spec.argv = SandboxCommand(options_, request);
  // bwrap hands its environment to the command: passed this way, not on bwrap's command
  // line, where every user of the host could read it.
  spec.env = SandboxEnv(request);
  spec.clear_env = true;
  spec.kill_grace_ms = request.kill_grace_ms;
  return runner_.Start(spec);
}

}  // namespace farm::agent
