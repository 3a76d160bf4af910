// The bubblewrap sandbox the farm runs untrusted commands in: a recipe's build and
// validation on a worker, and everything that comes from an upstream (the interpreter of
// a CPython archive, the installer, the resolver) on a worker or on farmd's host.
//   - the file system is the system directories read-only (/usr, /lib*, /bin, /sbin, /etc
//     without the farm's own configuration, /opt), the paths the request names read-only
//     or read-write, and the request's workspace read-write; nothing else exists: not the
//     worker's state directory and token, not other jobs' workspaces, not farmd's data
//     directory, not $HOME;
//   - a workspace is also mounted at the fixed path /farm/job, and the command's working
//     directory, arguments and environment name it there: builds compile the same paths on
//     every worker, which makes wheels reproducible across workers (docs/reproducibility.md);
//   - paths inside the workspace can be mounted again read-only (a job's environment,
//     whose files are links to a shared snapshot that no job may change);
//   - no network unless the request asks for it;
//   - its own PID, IPC and UTS namespaces and session: every process the command leaves
//     behind dies with it; no capabilities;
//   - under root, the command runs as an unprivileged user (build_user.h): bwrap keeps only
//     the capabilities to enter the user's working directory and to switch users, and
//     setpriv drops to the user, its group alone, no capabilities at all, before the
//     command starts;
//   - the GPUs (/dev/nvidia*) are passed in when the options name them.
// Pure functions, except Detect/Check (which read /dev, /etc and run bwrap once) and
// Confinement::Run; all thread-safe.
#ifndef FARM_COMMON_SANDBOX_SANDBOX_H_
#define FARM_COMMON_SANDBOX_SANDBOX_H_

#include <map>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/sandbox/build_user.h"
#include "common/status.h"

namespace farm::sandbox {

// The path every job's workspace also has inside the sandbox.
inline constexpr char kJobRoot[] = "/farm/job";

// A host path made visible inside at the same path.
struct Mount {
  std::string path;
  bool read_only = true;
};

struct Request {
  std::vector<std::string> argv;
  std::string cwd;                         // "" for /; inside `workspace` when it is set
  std::map<std::string, std::string> env;  // the complete environment
  std::string workspace;                   // bound read-write at its path and at kJobRoot
  std::vector<Mount> mounts;               // besides the workspace and the system
  // Directories outside the system ones that the command must read (an interpreter's
  // prefix, a toolkit); those under a system directory are visible already.
  std::vector<std::string> host_read_paths;
  // Paths under `workspace` bound again read-only on top of it (both names).
  std::vector<std::string> read_only_in_workspace;
  bool network = false;
};

struct Options {
  std::string bwrap = "bwrap";  // the bubblewrap binary
  std::vector<std::string> system_dirs = {"/usr",    "/lib", "/lib32", "/lib64",
                                          "/libx32", "/bin", "/sbin",  "/opt"};
  std::string etc = "/etc";             // bound read-only without `etc_hidden`
  std::vector<std::string> etc_hidden;  // entries of /etc masked (the farm's configuration)
  std::vector<std::string> devices;     // device nodes passed in (/dev/nvidia0, ...)
  BuildUser build_user;                 // who commands run as (root switches)
  std::string setpriv = "setpriv";      // util-linux, inside the sandbox
};

// The bwrap command line for `request` (argv ends with "--" and the request's argv, with
// its workspace paths moved to kJobRoot).
std::vector<std::string> Command(const Options& options, const Request& request);

// The command's environment: the request's, workspace paths moved to kJobRoot, and
// HOME=/tmp. bwrap passes it on; it never appears on a command line.
std::map<std::string, std::string> Env(const Request& request);

// Rewrites `text` so that paths under `workspace` name kJobRoot instead.
std::string ToSandboxPath(const std::string& text, const std::string& workspace);

// The directories the interpreter at `python` needs readable: its prefix (the parent of
// its bin/) and, for a virtual environment, the base interpreter's prefix from
// pyvenv.cfg's `home`. Paths are resolved through symlinks.
std::vector<std::string> PythonReadPaths(const std::string& python);

// Options for this host: the GPU device nodes when `gpus` (/dev/nvidia*, WSL2's /dev/dxg),
// and the entries of /etc whose names start with "farm" (the worker's and farmd's
// configuration) masked.
Options Detect(const std::string& bwrap, bool gpus = true);

// Runs `bwrap ... true` once: OK when the sandbox works on this host, else why not.
Status Check(ProcessRunner& runner, const Options& options);

// How a program of the farm runs a command from an upstream it does not trust (an
// interpreter unpacked from an archive, an installer, a resolver): in the sandbox when
// bubblewrap works here; else, under root, only switched to the unprivileged user with
// setpriv; else as the caller's own user. Never as root.
class Confinement {
 public:
  enum class Kind { kSandbox, kUserOnly, kNone };

  // Probes once with `runner`: the sandbox when `bwrap` ("" finds it on PATH) makes one,
  // else what is left. `user` is who commands run as (ResolveBuildUser).
  static Confinement Detect(ProcessRunner& runner, const BuildUser& user,
                            const std::string& bwrap = "");
  // No sandbox and no switch (tests and non-root callers that chose so).
  static Confinement None() { return Confinement(Kind::kNone, Options{}); }

  // `spec` rewritten to run confined, with `mounts` visible (the files the command reads
  // and the folders it writes: the latter must be the user's, GiveToBuildUser), the network
  // only when `network`. spec.cwd must be one of the mounts or "".
  ProcessSpec Wrap(const ProcessSpec& spec, const std::vector<Mount>& mounts, bool network) const;

  Kind kind() const { return kind_; }
  const BuildUser& user() const { return options_.build_user; }
  // "in a sandbox as nobody (65534:65534)", for logs.
  std::string Describe() const;

 private:
  Confinement(Kind kind, Options options) : kind_(kind), options_(std::move(options)) {}
  Kind kind_;
  Options options_;
  std::string reason_;  // why there is no sandbox
};

}  // namespace farm::sandbox

#endif  // FARM_COMMON_SANDBOX_SANDBOX_H_
