// Resolving an environment's lock with pip's own resolver (`pip install --dry-run
// --report`), never one of the farm's: the requirements a recipe means (`torch==2.11.0+cu130`,
// `setuptools>=64`, `ninja`) become every distribution the cell's Python gets, each as the
// one wheel chosen for it (env_lock.h).
//
// pip runs on this host's Python for the cell's target: `--python-version`, `--abi`,
// `--implementation` and `--platform` pick the target's wheels (a cp313 cell gets cp313
// wheels; an aarch64 cell manylinux aarch64 ones), and the environment markers of every
// requirement are evaluated for the target too (pip alone evaluates them for the
// interpreter it runs on; a small launcher sets pip's marker environment to the target's
// before pip starts: `platform_machine == "x86_64"` is false for an aarch64 cell).
// The pip is the farm's own (a wheel file named in the configuration, checked against its
// sha256), never one from the index, and it runs confined (common/sandbox): as an
// unprivileged user, in the sandbox where there is one, with only its scratch folder
// writable and the network to reach the index.
//
// Failures say whose they are: InvalidArgument when no wheel satisfies a requirement for
// the target or the requirements conflict (the recipe's: naming the requirement, the cell
// and the versions the index has), Unavailable when the index cannot be reached or answers
// 5xx (infrastructure: try again later), Internal otherwise.
// Thread-safe: several resolutions may run at once (each in its own scratch folder).
#ifndef FARM_COMMON_LOCK_PIP_RESOLVER_H_
#define FARM_COMMON_LOCK_PIP_RESOLVER_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/lock/env_lock.h"
#include "common/process.h"
#include "common/sandbox/sandbox.h"
#include "common/status.h"
#include "common/upstream/fetcher.h"

namespace farm::lock {

struct ResolveRequest {
  std::string python;                     // "3.12" (or "3.12.3")
  std::string platform = "linux_x86_64";  // the cell's wheel platform
  std::string glibc = "2.28";             // the oldest glibc the cell's workers have
  std::string index_url;                  // the index pip reads (may hold a credential)
  std::string index_name;                 // the farm's name of it ("cu130"), recorded
  std::vector<std::string> requirements;  // PEP 508, as the recipe means them
};

// "Python 3.12 on linux_x86_64 from the cu130 index", for messages.
std::string DescribeTarget(const ResolveRequest& request);

class Resolver {
 public:
  virtual ~Resolver() = default;
  virtual Result<EnvLock> Resolve(const ResolveRequest& request) = 0;
};

struct PipResolverOptions {
  std::string python = "/usr/bin/python3";  // the interpreter pip runs on
  std::string pip_wheel;   // the farm's pip, a wheel file (Debian's python3-pip-whl by default)
  std::string pip_sha256;  // checked before every run when set
  std::string work_dir;    // scratch folders are made (and removed) under it
  int64_t timeout_ms = int64_t{20} * 60 * 1000;
  // Where the index really has a file pip was given (the farm's pull-through cache rewrites
  // file URLs to itself): the upstream URL, or the URL itself. Null: the URL itself.
  std::function<std::string(const std::string& url)> upstream_url;
  // The index URL recorded in the lock for every package (the upstream's); "" records
  // request.index_url.
  std::string upstream_index_url;
  // Certificate authorities of an https index (farmd's own, when its dashboard serves TLS).
  std::string ca_file;
  // Reads the index's project pages for what pip's report leaves out (each wheel's size);
  // null: sizes stay unknown. Must outlive the resolver.
  upstream::Fetcher* fetcher = nullptr;
};

class PipResolver final : public Resolver {
 public:
  // `runner` must outlive the resolver; `confinement` says how pip runs.
  PipResolver(PipResolverOptions options, ProcessRunner* runner, sandbox::Confinement confinement);
  Result<EnvLock> Resolve(const ResolveRequest& request) override;

 private:
  // The pip that runs: its wheel unpacked and compiled under work_dir by the first
  // resolution (UnpackPip), or, where that failed (logged), the wheel itself.
  std::string Pip();

  PipResolverOptions options_;
  ProcessRunner* runner_;
  sandbox::Confinement confinement_;
  std::mutex unpack_mu_;
  bool unpacked_tried_ = false;
  std::string unpacked_;
};

// Unpacks the pip wheel `wheel` into `under`/pip-<its sha256's first 16 digits> (kept: a
// later call finds it there) and compiles its modules with `python`, so a run imports
// bytecode instead of compiling pip from the zip each time. Folders 0755, files 0644 (the
// resolver's user reads them). Internal when python fails (the folder is then not there)
// or the folder holds no pip to run.
Result<std::string> UnpackPip(ProcessRunner& runner, const std::string& python,
                              const std::string& wheel, const std::string& under);

// The pip command's arguments after `pip` for `request` (its report on stdout; `target_dir`
// an empty folder pip's target options need).
std::vector<std::string> PipArguments(const ResolveRequest& request, const std::string& target_dir);

// The wheel platform tags a target accepts, best first: manylinux_2_<glibc..17>_<arch>,
// manylinux2014_<arch>, ..., linux_<arch>.
std::vector<std::string> PlatformTags(const std::string& platform, const std::string& glibc);

// The lock pip's `--report` JSON describes. InvalidArgument for a report that is not one,
// or installs anything but a wheel with a sha256.
Result<EnvLock> LockFromReport(const std::string& report_json, const ResolveRequest& request,
                               const PipResolverOptions& options);

// Fills each package's size from the index's project page (PEP 691 gives sizes) and checks
// the page lists the same sha256 for the file pip chose; a page that cannot be read leaves
// the size unknown. DataLoss when a page lists another digest for the file.
Status FillSizes(upstream::Fetcher& fetcher, const std::string& index_url, EnvLock* lock);

// The Status of a pip run that failed, by what pip printed (see the header comment).
Status ResolutionFailure(const std::string& pip_output, int exit_code,
                         const ResolveRequest& request);

// As ResolutionFailure; where pip found no version of a project at all, also reads that
// project's page with `fetcher`. pip skips a page it could not read (a 5xx, a refused
// connection) at a level --quiet hides, so that reads like a project the index lacks: a
// page that cannot be read now is the index's failure (Unavailable, naming its answer).
Status ResolutionFailureReadingIndex(upstream::Fetcher& fetcher, const std::string& pip_output,
                                     int exit_code, const ResolveRequest& request);

// The newest pip wheel under `dir` (Debian's /usr/share/python-wheels); "" for none.
std::string FindPipWheel(const std::string& dir = "/usr/share/python-wheels");

}  // namespace farm::lock

#endif  // FARM_COMMON_LOCK_PIP_RESOLVER_H_
