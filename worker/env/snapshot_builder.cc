// Provisioner::BuildSnapshot: fetches exactly the cell's locked wheels into the verified
// cache and installs them into a fresh venv with the farm's installer, confined, without
// resolving and without an index; then proves the lock complete and seals the result.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "common/fs.h"
#include "common/upstream/simple_index.h"
#include "common/wheel/wheel_name.h"
#include "worker/env/downloads.h"
#include "worker/env/failure.h"
#include "worker/env/provisioner.h"
#include "worker/env/tree_ops.h"

namespace farm::env {
namespace {

// The Status of a failed provisioning command, by what its output says.
Status CommandFailure(const std::string& what, const CapturedOutput& out) {
  std::string text = out.err + "\n" + out.out;
  std::string tail = text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  std::string message =
      what +
      (out.result.timed_out ? " timed out"
                            : " failed (exit " + std::to_string(out.result.exit_code) + ")") +
      ": " + tail;
  if (text.find("No space left on device") != std::string::npos ||
      text.find("Disk quota exceeded") != std::string::npos) {
    return Status::ResourceExhausted(message);
  }
  return Status::Internal(message);
}

// A plain environment for provisioning commands: nothing of the worker's (tokens, proxies,
// pip configuration) reaches them. `home` must be a folder they may write.
std::map<std::string, std::string> CommandEnv(const std::string& home) {
  return {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
          {"HOME", home},
          {"LANG", "C.UTF-8"},
          {"PIP_CONFIG_FILE", "/dev/null"},
          {"PYTHONNOUSERSITE", "1"},
          {"PIP_NO_INPUT", "1"},
          {"TMPDIR", home}};
}

// The prefix of the interpreter `python` (the parent of its bin/), which the confined
// commands must read.
std::string PythonPrefix(const std::string& python) {
  std::string bin = python.substr(0, python.rfind('/'));
  return bin.substr(0, bin.rfind('/'));
}

// The URL a locked wheel is fetched from: farmd's pull-through files route when the worker
// provisions through farmd, else where the lock says the index has it.
std::string LockedFileUrl(const lock::LockedPackage& p, const std::string& index_name,
                          const std::string& files_base) {
  if (files_base.empty() || index_name.empty()) return p.url;
  std::string name = p.filename;
  for (size_t at = name.find('+'); at != std::string::npos; at = name.find('+', at)) {
    name.replace(at, 1, "%2B");
  }
  return files_base + index_name + "/" + p.sha256 + "/" + name;
}

// The install command: the farm's pip (`pip`: its wheel, or the unpacked copy), or uv, from
// the wheel files alone (--no-deps, no index: nothing is resolved, the lock is what is
// installed).
ProcessSpec InstallCommand(const ProvisionerOptions& o, const std::string& pip,
                           const std::string& venv, const std::string& home,
                           const std::vector<std::string>& files) {
  ProcessSpec install;
  install.clear_env = true;
  install.env = CommandEnv(home);
  if (o.uv.empty()) {
    install.argv = {venv + "/bin/python",
                    pip + "/pip",
                    "install",
                    "--no-deps",
                    "--no-index",
                    "--no-cache-dir",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--only-binary",
                    ":all:"};
  } else {
    install.argv = {
        o.uv,        "pip",        "install",   "--python",          venv + "/bin/python",
        "--offline", "--no-index", "--no-deps", "--compile-bytecode"};
    install.env["UV_CACHE_DIR"] = home + "/.uv-cache";
    install.env["UV_NO_CONFIG"] = "1";
    install.env["UV_PYTHON_DOWNLOADS"] = "never";
    install.env["UV_NO_PROGRESS"] = "1";
  }
  install.argv.insert(install.argv.end(), files.begin(), files.end());
  return install;
}

}  // namespace

Status Provisioner::RunConfined(const std::string& what, ProcessSpec spec,
                                const std::vector<sandbox::Mount>& mounts, CapturedOutput* out) {
  ProcessSpec confined = options_.confinement.Wrap(spec, mounts, /*network=*/false);
  FARM_ASSIGN_OR_RETURN(CapturedOutput ran,
                        RunAndCapture(*runner_, confined, options_.command_timeout_ms));
  if (ran.result.exit_code != 0 || ran.result.timed_out) return CommandFailure(what, ran);
  if (out != nullptr) *out = std::move(ran);
  return Status::Ok();
}

Status Provisioner::FetchLocked(const lock::EnvLock& lock, const ProvisionSources& sources,
                                const std::string& house, std::vector<CachePin>* pins,
                                ProvisionedEnv* env, const ProgressSink& progress) {
  for (const lock::LockedPackage& p : lock.packages) {
    FARM_ASSIGN_OR_RETURN(CachePin pin, cache_->Pin(kDownloads, p.sha256));
    pins->push_back(std::move(pin));
    const bool cached = cache_->IsComplete(kDownloads, p.sha256);
    const std::string url = LockedFileUrl(p, lock.index_name, sources.files_base);
    Result<std::string> blob =
        FetchVerified(*cache_, *fetcher_, {url, p.sha256, p.size, p.filename},
                      ThrottledProgress(progress, ProvisionPhase::kPackages, p.filename));
    if (!blob.ok()) {
      // A locked file that is gone or changed upstream: the lock names it exactly.
      return blob.status().WithContext("the locked file " + p.filename + " (sha256 " +
                                       p.sha256.substr(0, 12) + "...)");
    }
    if (!cached) {
      struct stat st {};
      if (::stat(blob->c_str(), &st) == 0) env->downloaded_bytes += st.st_size;
    }
    std::string linked = house + "/" + p.filename;
    if (::link(blob->c_str(), linked.c_str()) != 0)
      return ErrnoStatus(errno, "cannot link", linked);
  }
  return Status::Ok();
}

Status Provisioner::BuildSnapshot(const EnvSpec& spec, const ProvisionSources& sources,
                                  const std::string& python, const std::string& dir,
                                  ProvisionedEnv* env, const ProgressSink& progress) {
  upstream::TargetPython target = options_.target;
  target.version = MajorMinor(spec.python);
  if (wheel::PlatformArch(spec.platform) != target.arch) {
    return Status::FailedPrecondition("this worker provisions " + target.arch + ", not " +
                                      spec.platform);
  }
  for (const lock::LockedPackage& p : spec.lock.packages) {
    upstream::IndexFile file{p.filename, p.url, p.sha256, p.size};
    if (!upstream::SelectWheel({file}, p.name, p.version, target).ok()) {
      return Status::InvalidArgument("the lock's " + p.filename + " does not install on Python " +
                                     target.version + " " + target.arch + " with glibc " +
                                     target.glibc);
    }
  }
  FARM_ASSIGN_OR_RETURN(std::string house, cache_->MakeScratch("wheelhouse-"));
  auto cleanup = [&](Status s) {
    (void)fs::RemoveAll(house);
    return s;
  };
  std::vector<CachePin> download_pins;
  Status fetched = FetchLocked(spec.lock, sources, house, &download_pins, env, progress);
  if (!fetched.ok()) return cleanup(fetched);
  // The confined commands read the wheelhouse and write only `dir`, as the build user.
  if (::chmod(house.c_str(), 0755) != 0) return cleanup(ErrnoStatus(errno, "cannot open", house));
  const sandbox::BuildUser& user = options_.confinement.user();
  if (Status given = sandbox::GiveToBuildUser(user, dir, true); !given.ok()) return cleanup(given);
  std::vector<std::string> files;
  for (const lock::LockedPackage& p : spec.lock.packages) files.push_back(house + "/" + p.filename);
  // Builds run pip: the farm's own unless the lock brings one.
  if (lock::Find(spec.lock, "pip") == nullptr) files.push_back(options_.installer_wheel);
  const std::string tool = options_.uv.empty() ? "pip" : "uv";
  if (progress) {
    progress({ProvisionPhase::kSnapshot, "installing " + std::to_string(files.size()) +
                                             " locked packages into a new venv with " + tool +
                                             ", " + options_.confinement.Describe()});
  }
  const std::string venv = dir + "/venv";
  std::vector<sandbox::Mount> mounts = {
      {dir, false}, {house, true}, {PythonPrefix(python), true}, {options_.installer_wheel, true}};
  if (installer_run_ != options_.installer_wheel) mounts.push_back({installer_run_, true});
  if (!options_.uv.empty()) mounts.push_back({options_.uv, true});
  ProcessSpec make_venv;
  make_venv.argv = {python, "-m", "venv", "--without-pip", venv};
  make_venv.clear_env = true;
  make_venv.env = CommandEnv(dir);
  Status s = RunConfined("python -m venv", make_venv, mounts);
  if (s.ok())
    s = RunConfined(tool + " install", InstallCommand(options_, installer_run_, venv, dir, files),
                    mounts);
  // Every requirement of what is installed is installed: the lock is complete.
  ProcessSpec check = InstallCommand(options_, installer_run_, venv, dir, {});
  check.argv = options_.uv.empty()
                   ? std::vector<std::string>{venv + "/bin/python", installer_run_ + "/pip",
                                              "check", "--disable-pip-version-check"}
                   : std::vector<std::string>{options_.uv,          "pip",      "check", "--python",
                                              venv + "/bin/python", "--offline"};
  if (s.ok()) {
    s = RunConfined(tool + " check", check, mounts);
    if (!s.ok() && FailureOf(s) == ProvisionFailure::kInternal) {
      s = Status::InvalidArgument("the lock is not complete: " + s.message());
    }
  }
  (void)fs::RemoveAll(dir + "/.uv-cache");
  // What the user wrote becomes the worker's before it is sealed, whatever happened.
  Status taken = sandbox::TakeBackFromBuildUser(user, dir);
  if (!s.ok()) return cleanup(s);
  if (!taken.ok()) return cleanup(taken);
  FARM_RETURN_IF_ERROR(cleanup(fs::WriteFileAtomic(dir + "/pylock.toml", lock::ToToml(spec.lock))));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/origin", venv));
  return SealTree(venv);
}

Status Provisioner::CheckSealed(const std::string& entry) const {
  return CheckSealedTree(entry + "/venv", ::geteuid());
}

}  // namespace farm::env
