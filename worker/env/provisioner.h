// The worker's environment provisioner: makes the environment of a matrix cell (env_spec.h)
// from caches it keeps, and hands each job its own copy.
//
//   Python   a host interpreter of that version, else a relocatable CPython archive
//            (python-build-standalone's install_only layout) from a configured release
//            folder (its SHA256SUMS) or explicit URL + sha256, unpacked into the cache.
//   toolkit  a host toolkit of that version, else NVIDIA's redist archives: the newest
//            redistrib_<version>.json matching the cell's CUDA in the configured folder,
//            each archive checked by its sha256, merged into one toolkit in the cache.
//   packages exactly the cell's lock (common/lock/env_lock.h, which farmd resolved with pip):
//            each locked wheel fetched (from farmd's pull-through cache, or the URL the lock
//            names) into the content-addressed cache, checked by its sha256, and
//            installed into a fresh venv with the farm's own installer (a pip wheel the
//            worker's configuration names, or uv) with --no-deps and no index: nothing is
//            resolved here and nothing else is downloaded; `pip check` then proves the lock
//            complete.
//   snapshot the finished venv, keyed by a digest of all its inputs (the lock's digest among
//            them), sealed: the worker's, read-only; each job gets a clone of it (reflinks or
//            hard links), checked still sealed before it is cloned, so a second job in an
//            environment costs a tree of links and no network at all.
// Nothing from an upstream runs as root: the unpacked interpreter's version check, venv
// creation, the installer and `pip check` run confined (common/sandbox: the sandbox as the
// build user, else the build user alone), with only the folder they write writable; what
// they wrote is taken back by the worker before it is sealed.
// Everything lands in the cache through CacheStore (crash-safe, LRU-bounded, pinned while
// in use). Failures are Status codes by failure.h's table.
//
// Thread-safe: jobs may provision concurrently (the upstream::Fetcher and ProcessRunner must be).
#ifndef FARM_WORKER_ENV_PROVISIONER_H_
#define FARM_WORKER_ENV_PROVISIONER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/lock/env_lock.h"
#include "common/process.h"
#include "common/sandbox/sandbox.h"
#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "common/upstream/simple_index.h"
#include "worker/env/cache_store.h"
#include "worker/env/downloads.h"
#include "worker/env/env_spec.h"

namespace farm::env {

struct HostPython {
  std::string version;  // "3.11.2"
  std::string path;
};

struct HostToolkit {
  std::string version;  // "13.0.88" or "13.0"
  std::string path;     // CUDA_HOME
};

struct PythonArchive {
  std::string version;  // "3.11.2"
  std::string url;
  std::string sha256;
};

// Where a provisioning gets what it downloads. Given per call: farmd's address can change
// between jobs (a restart on another port), and a worker learns it from heartbeats.
struct ProvisionSources {
  // Locked wheels: `files_base` + "<index name>/<sha256>/<filename>" (farmd's pull-through
  // files route) when set; else the URL the lock names.
  std::string files_base;
  // NVIDIA's redist folder (".../compute/cuda/redist/"); "" to use host toolkits only.
  std::string redist_url;
  // A python-build-standalone release folder holding SHA256SUMS and the archives.
  std::string python_release_url;
  // farmd's address ("http://host:port/") when the sources above are its routes: cache keys
  // name them by their path below it, so farmd on a new address reuses what was made.
  std::string farm_base;
};

struct ProvisionerOptions {
  std::string cache_dir;
  int64_t max_cache_bytes = int64_t{64} << 30;
  // The farm's installer: a pip wheel file from a source the worker trusts (Debian's
  // python3-pip-whl by default), never one from an index; run as `python PIP/pip` (PIP the
  // wheel, or its unpacked copy: installer_python), and
  // installed into every environment whose lock has no pip of its own (builds run pip).
  std::string installer_wheel;
  std::string installer_sha256;  // checked before each use when set
  // The host's own Python (trusted, never a cell's), which unpacks the installer into the
  // cache and compiles it once (lock::UnpackPip): pip then runs from bytecode wherever a
  // cell's Python is that version, instead of compiling itself from the zip on every
  // install. "": pip runs from the wheel itself.
  std::string installer_python;
  // A uv binary that installs the locked wheels instead of pip; "" installs with pip.
  std::string uv;
  std::vector<std::string> redist_components;  // empty: DefaultRedistComponents()
  std::string redist_platform = "linux-x86_64";
  std::vector<PythonArchive> python_archives;  // tried before the release folder
  std::vector<HostPython> host_pythons;
  std::vector<HostToolkit> host_toolkits;
  upstream::TargetPython target;  // arch and glibc; version is the spec's
  int64_t command_timeout_ms = 30 * 60 * 1000;
  // How commands from upstreams run (never as root).
  sandbox::Confinement confinement = sandbox::Confinement::None();
};

enum class ProvisionPhase { kPython, kToolkit, kPackages, kSnapshot, kClone };
const char* ProvisionPhaseName(ProvisionPhase phase);

struct ProvisionProgress {
  ProvisionPhase phase = ProvisionPhase::kPython;
  std::string message;
  int64_t done = -1;  // bytes, for downloads
  int64_t total = -1;
};
using ProgressSink = std::function<void(const ProvisionProgress&)>;

// A download progress callback that reports to `sink` at the start, each quarter of the
// download and its end, not per block; null when `sink` is.
ProgressFn ThrottledProgress(const ProgressSink& sink, ProvisionPhase phase,
                             const std::string& what);

struct PhaseTimes {
  int64_t python_ms = 0;
  int64_t toolkit_ms = 0;
  int64_t snapshot_ms = 0;  // downloading and installing the locked packages
  int64_t clone_ms = 0;
};

// A job's environment. Holding it keeps the cache entries it uses from eviction.
struct ProvisionedEnv {
  std::string key;       // the snapshot's digest
  std::string venv_dir;  // the job's own clone
  std::string python;    // venv_dir/bin/python
  std::string base_python;
  std::string cuda_home;         // "" when the spec asks for no toolkit
  std::string torch;             // the torch installed, "2.8.0+cu128"; "" for none
  int64_t downloaded_bytes = 0;  // what this provisioning fetched (0: all from the cache)
  bool python_from_archive = false;
  bool toolkit_from_redist = false;
  bool snapshot_built = false;  // false: an existing snapshot was cloned
  PhaseTimes times;
  std::vector<std::string> notes;  // e.g. a yanked pin
  std::vector<CachePin> pins;
};

class Provisioner {
 public:
  // `fetcher`, `runner` and `clock` must outlive the provisioner.
  static Result<std::unique_ptr<Provisioner>> Create(const ProvisionerOptions& options,
                                                     upstream::Fetcher* fetcher,
                                                     ProcessRunner* runner, const Clock* clock);

  // Makes (or reuses) the environment of `spec` and clones it to `job_dir`/venv
  // (`job_dir` must exist; "venv" must not).
  Result<ProvisionedEnv> Provision(const EnvSpec& spec, const ProvisionSources& sources,
                                   const std::string& job_dir, const ProgressSink& progress);

  // The digest a snapshot of `spec` is kept under on this worker. Needs no network.
  Result<std::string> SnapshotKey(const EnvSpec& spec, const ProvisionSources& sources);

  CacheStore& cache() { return *cache_; }

 private:
  Provisioner(const ProvisionerOptions& options, upstream::Fetcher* fetcher, ProcessRunner* runner,
              const Clock* clock)
      : options_(options), fetcher_(fetcher), runner_(runner), clock_(clock) {}

  struct PythonChoice {
    std::string identity;   // enters the snapshot key
    std::string host_path;  // set for a host interpreter
    PythonArchive archive;  // set otherwise
  };
  Result<PythonChoice> ChoosePython(const std::string& version, const ProvisionSources& sources);
  Result<std::string> ProvidePython(const PythonChoice& choice, const ProvisionSources& sources,
                                    ProvisionedEnv* env, const ProgressSink& progress);
  // `url` in cache keys: below sources.farm_base it is the farm's, wherever farmd listens.
  static std::string KeyUrl(const std::string& url, const ProvisionSources& sources);
  Result<std::string> ProvideToolkit(const std::string& cuda, const ProvisionSources& sources,
                                     ProvisionedEnv* env, const ProgressSink& progress);
  Status BuildToolkit(const std::string& cuda, const std::vector<std::string>& components,
                      const std::string& redist_url, const std::string& dir,
                      const ProgressSink& progress);
  Result<PythonArchive> ResolvePythonRelease(const std::string& version, const std::string& base);
  Status BuildSnapshot(const EnvSpec& spec, const ProvisionSources& sources,
                       const std::string& python, const std::string& dir, ProvisionedEnv* env,
                       const ProgressSink& progress);
  // Fetches every locked wheel into the verified cache and links it into `house`.
  Status FetchLocked(const lock::EnvLock& lock, const ProvisionSources& sources,
                     const std::string& house, std::vector<CachePin>* pins, ProvisionedEnv* env,
                     const ProgressSink& progress);
  // Runs `spec` confined, with `mounts` visible; the failure Status names `what`.
  Status RunConfined(const std::string& what, ProcessSpec spec,
                     const std::vector<sandbox::Mount>& mounts, CapturedOutput* out = nullptr);
  Status CheckPythonVersion(const std::string& python, const std::string& wanted);
  // OK when the entry's files are still as sealed (the worker's, read-only).
  Status CheckSealed(const std::string& entry) const;
  // The snapshot of `spec` (env->key), built when missing; one that is no longer as it was
  // sealed is discarded and built again.
  Result<std::string> EnsureSnapshot(const EnvSpec& spec, const ProvisionSources& sources,
                                     ProvisionedEnv* env, const ProgressSink& progress);
  // FailedPrecondition unless the installer wheel is still the one configured (its digest,
  // or the one it had when the provisioner was made).
  Status CheckInstaller() const;

  ProvisionerOptions options_;
  upstream::Fetcher* fetcher_;
  ProcessRunner* runner_;
  const Clock* clock_;
  std::unique_ptr<CacheStore> cache_;
  std::string installer_digest_;  // the installer wheel's sha256, read once by Create
  std::string installer_run_;     // what runs as pip: the unpacked installer, or the wheel
};

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_PROVISIONER_H_
