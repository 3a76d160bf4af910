// The worker's environment provisioner: makes the environment of a matrix cell (env_spec.h)
// from caches it keeps, and hands each job its own copy.
//
//   Python   a host interpreter of that version, else a relocatable CPython archive
//            (python-build-standalone's install_only layout) from a configured release
//            folder (its SHA256SUMS) or explicit URL + sha256, unpacked into the cache.
//   toolkit  a host toolkit of that version, else NVIDIA's redist archives: the newest
//            redistrib_<version>.json matching the cell's CUDA in the configured folder,
//            each archive checked by its sha256, merged into one toolkit in the cache.
//   packages torch and the build requirements, exact pins, resolved on the index of the
//            torch's CUDA variant (PEP 691 JSON, PEP 503 HTML fallback), downloaded into
//            the content-addressed cache checked by sha256, and installed into a fresh
//            venv with the pinned pip, run from its own wheel with --no-index: pip never
//            downloads anything.
//   snapshot the finished venv, keyed by a digest of all its inputs, sealed read-only;
//            each job gets a clone of it (reflinks or hard links), so a second job in an
//            environment costs a tree of links and no network at all.
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
#include "common/process.h"
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

struct ProvisionerOptions {
  std::string cache_dir;
  int64_t max_cache_bytes = int64_t{64} << 30;
  // Package indexes by torch CUDA variant ("cu128" -> ".../whl/cu128/"); "" is the
  // index for environments whose torch has no variant, and for variants not listed. A URL
  // may hold "{variant}" (ExpandVariant): ".../whl/{variant}/".
  std::map<std::string, std::string> indexes;
  std::string installer = "pip==23.0.1";  // pinned like any requirement, from the index
  // A uv binary that installs the pinned packages instead of pip (the installer is still
  // installed: builds run pip); "" installs with pip.
  std::string uv;
  // NVIDIA's redist folder (".../compute/cuda/redist/"); "" to use host toolkits only.
  std::string redist_url;
  std::vector<std::string> redist_components;  // empty: DefaultRedistComponents()
  std::string redist_platform = "linux-x86_64";
  // A python-build-standalone release folder holding SHA256SUMS and the archives.
  std::string python_release_url;
  std::vector<PythonArchive> python_archives;  // tried before the release folder
  std::vector<HostPython> host_pythons;
  std::vector<HostToolkit> host_toolkits;
  upstream::TargetPython target;  // arch and glibc; version is the spec's
  int64_t command_timeout_ms = 30 * 60 * 1000;
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

// A download progress callback that reports to `sink` about every 8 MiB and at the end,
// not per block; null when `sink` is.
ProgressFn ThrottledProgress(const ProgressSink& sink, ProvisionPhase phase,
                             const std::string& what);

struct PhaseTimes {
  int64_t python_ms = 0;
  int64_t toolkit_ms = 0;
  int64_t snapshot_ms = 0;  // resolving, downloading and installing packages
  int64_t clone_ms = 0;
};

// A job's environment. Holding it keeps the cache entries it uses from eviction.
struct ProvisionedEnv {
  std::string key;       // the snapshot's digest
  std::string venv_dir;  // the job's own clone
  std::string python;    // venv_dir/bin/python
  std::string base_python;
  std::string cuda_home;  // "" when the spec asks for no toolkit
  std::string torch;      // the torch installed, "2.8.0+cu128"; "" for none
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
  Result<ProvisionedEnv> Provision(const EnvSpec& spec, const std::string& job_dir,
                                   const ProgressSink& progress);

  // The digest a snapshot of `spec` is kept under on this worker. Needs no network.
  Result<std::string> SnapshotKey(const EnvSpec& spec);

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
  Result<PythonChoice> ChoosePython(const std::string& version);
  Result<std::string> ProvidePython(const PythonChoice& choice, ProvisionedEnv* env,
                                    const ProgressSink& progress);
  Result<std::string> ProvideToolkit(const std::string& cuda, ProvisionedEnv* env,
                                     const ProgressSink& progress);
  Status BuildToolkit(const std::string& cuda, const std::vector<std::string>& components,
                      const std::string& dir, const ProgressSink& progress);
  Result<PythonArchive> ResolvePythonRelease(const std::string& version);
  Status BuildSnapshot(const EnvSpec& spec, const std::string& python, const std::string& dir,
                       ProvisionedEnv* env, const ProgressSink& progress);
  // The wheel of pin `r` on `index` (r's version may lose its local label: ChooseWheel).
  Result<upstream::IndexFile> ResolvePin(const std::string& index,
                                         const upstream::TargetPython& target, Requirement* r,
                                         ProvisionedEnv* env);
  // FailedPrecondition (the recipe's) naming the pin to add for each requirement of the
  // pinned wheels (`files`, resolved for `pins`) that the pins miss or contradict
  // (pin_check.h). Reads the wheels' METADATA, PEP 658 metadata when the index offers it,
  // else from the wheel (fetched into the cache, pinned in `download_pins`); torch's is
  // read and checked before anything else is fetched.
  Status CheckLock(const EnvSpec& spec, const std::string& index,
                   const upstream::TargetPython& target, const std::vector<Requirement>& pins,
                   const std::vector<upstream::IndexFile>& files,
                   std::vector<CachePin>* download_pins, const ProgressSink& progress);
  std::string IndexFor(const EnvSpec& spec) const;
  Status CheckPythonVersion(const std::string& python, const std::string& wanted);

  ProvisionerOptions options_;
  upstream::Fetcher* fetcher_;
  ProcessRunner* runner_;
  const Clock* clock_;
  std::unique_ptr<CacheStore> cache_;
};

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_PROVISIONER_H_
