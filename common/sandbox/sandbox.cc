#include "common/sandbox/sandbox.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace farm::sandbox {
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
    out += whole ? kJobRoot : workspace;
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
  Binds(const Options& o, std::vector<std::string>& argv) : o_(o), a_(argv) {}

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

  const Options& o_;
  std::vector<std::string>& a_;
  std::set<std::string> made_;
};

}  // namespace

std::vector<std::string> Command(const Options& o, const Request& r) {
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
  if (!r.network) a.push_back("--unshare-net");
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
    binds.Add("--bind", r.workspace, kJobRoot);
    for (const auto& p : r.read_only_in_workspace) {
      binds.Add("--ro-bind", p, p);
      binds.Add("--ro-bind", p, ToSandboxPath(p, r.workspace));
    }
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

Options Detect(const std::string& bwrap, bool gpus) {
  Options o;
  o.bwrap = bwrap;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator("/dev", ec)) {
    if (!gpus) break;
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

Status Check(ProcessRunner& runner, const Options& options) {
  Request probe;
  probe.argv = {"true"};
  ProcessSpec spec;
  spec.argv = Command(options, probe);
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

std::map<std::string, std::string> Env(const Request& request) {
  std::map<std::string, std::string> env;
  for (const auto& [key, value] : request.env) env[key] = ToSandboxPath(value, request.workspace);
  env["HOME"] = "/tmp";  // the worker's home does not exist in the sandbox
  return env;
}

Confinement Confinement::Detect(ProcessRunner& runner, const BuildUser& user,
                                const std::string& bwrap) {
  std::string path = bwrap.empty() ? FindInPath("bwrap") : bwrap;
  Options options = sandbox::Detect(path, /*gpus=*/false);
  options.build_user = user;
  Status works = path.empty() ? Status::NotFound("bubblewrap (bwrap) is not installed")
                              : Check(runner, options);
  if (works.ok()) return Confinement(Kind::kSandbox, options);
  Confinement fallback(user.switches ? Kind::kUserOnly : Kind::kNone, options);
  fallback.reason_ = works.message();
  return fallback;
}

ProcessSpec Confinement::Wrap(const ProcessSpec& spec, const std::vector<Mount>& mounts,
                              bool network) const {
  ProcessSpec out = spec;
  switch (kind_) {
    case Kind::kSandbox: {
      Request r;
      r.argv = spec.argv;
      r.cwd = spec.cwd;
      r.env = spec.env;
      r.mounts = mounts;
      r.network = network;
      out.argv = Command(options_, r);
      // HOME is the sandbox's /tmp unless the command names its own (a folder it writes).
      std::map<std::string, std::string> env = Env(r);
      if (auto home = spec.env.find("HOME"); home != spec.env.end()) env["HOME"] = home->second;
      out.env = std::move(env);
      out.clear_env = true;
      out.cwd.clear();  // bwrap --chdir
      return out;
    }
    case Kind::kUserOnly: {
      const BuildUser& u = options_.build_user;
      out.argv = {options_.setpriv,
                  "--reuid=" + std::to_string(u.uid),
                  "--regid=" + std::to_string(u.gid),
                  "--clear-groups",
                  "--no-new-privs",
                  "--inh-caps=-all",
                  "--bounding-set=-all",
                  "--"};
      out.argv.insert(out.argv.end(), spec.argv.begin(), spec.argv.end());
      return out;
    }
    case Kind::kNone:
      return out;
  }
  return out;
}

std::string Confinement::Describe() const {
  switch (kind_) {
    case Kind::kSandbox:
      return options_.build_user.switches ? "in a sandbox as " + options_.build_user.name
                                          : "in a sandbox";
    case Kind::kUserOnly:
      return "as " + options_.build_user.name + " without a sandbox (" + reason_ + ")";
    case Kind::kNone:
      return reason_.empty() ? "unconfined" : "without a sandbox (" + reason_ + ")";
  }
  return "unconfined";
}

}  // namespace farm::sandbox
