// CompileCache: the worker's ccache, shared by every job it runs. It puts the host
// compilers and nvcc of a job's build behind ccache and counts, per job, how many compiles
// the cache answered.
//
// Namespaces: the cache is split into namespaces that farmd names per principal and
// recipe (JobAssignment.cache_namespace, an opaque hex id); the worker maps the id to a
// directory of its own choosing, <ccache-dir>/ns/<id>, and a build sees (and can write)
// only its own. A build can therefore poison objects only for later builds of the same
// principal's same recipe, never another principal's.
//
// Configuration: ccache reads only a file the farm writes for each job, outside the
// workspace and the namespace (<tools-dir>/jobs/<job>/ccache.conf, read-only to the
// build): the namespace, size limit, base directory and statistics log, and a ccache
// `namespace` for builds whose NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS carry flags of their
// own (ccache leaves them out of its hash; fatbin_compression puts one there). The farm's
// wrappers set CCACHE_CONFIGPATH to it and drop every CCACHE_* variable of the build
// first, so neither the build's environment nor a ccache.conf the build writes into its
// namespace changes how the farm's wrappers run ccache (prefix_command and the like).
//
// Every job builds in a new workspace directory, so the configuration makes paths under
// the workspace relative (base_dir) and leaves the working directory out of the hash
// (hash_dir = false); otherwise no compile would ever hit. Compilers reach ccache through
// the job's masquerade directory first on PATH (gcc, g++, cc, c++, ...); nvcc through a
// shadow CUDA_HOME whose bin/nvcc runs the job's ccache launcher (setup.py files that call
// $CUDA_HOME/bin/nvcc themselves) and PYTORCH_NVCC (torch.utils.cpp_extension with
// ninja). The shadow toolkit is shared and stays at one path, so -I paths hash the same in
// every job. Each job's compiles append to the job's own statistics log, so concurrent
// jobs sharing one cache directory are counted apart.
//
// Ownership: the Agent owns one CompileCache and hands JobRunners a pointer. Thread-safe:
// PrepareJob may run on several job threads at once (the shadow toolkits are written under
// a mutex, once per toolkit).
#ifndef FARM_WORKER_CACHE_COMPILE_CACHE_H_
#define FARM_WORKER_CACHE_COMPILE_CACHE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "worker/exec/executor.h"

namespace farm::agent {

struct CompileCacheOptions {
  bool enabled = true;           // --no-ccache turns it off for every job
  std::string cache_dir;         // CCACHE_DIR, shared by all jobs of this worker
  std::string max_size = "20G";  // CCACHE_MAXSIZE (ccache's size syntax)
  std::string tools_dir;         // wrappers and shadow toolkits; rewritten at start
};

// The statistics log of a job, in its workspace.
inline constexpr char kStatsLogName[] = "ccache-stats.log";

// Whether `id` is a cache namespace id as farmd sends it: 32 to 64 lowercase hex digits.
bool IsCacheNamespaceId(const std::string& id);

// The job's statistics log as the build left it in `workspace`, read without following
// links or trusting its size (at most 64 MiB); "" when there is none.
Result<std::string> ReadJobStatsLog(const std::string& workspace);

// How one job uses the cache: made by PrepareJob, read back by FinishJob.
struct JobCacheUse {
  bool used = false;
  std::string note;           // for the job log ("compile cache: ..."); may be empty
  std::string workspace;      // where the job's statistics log is (kStatsLogName)
  std::string namespace_dir;  // the job's namespace of the cache
  std::string job_dir;        // the job's configuration and wrappers; removed by FinishJob
  // What a container or sandbox must mount at the same path: the job's namespace of the
  // cache (read-write) and the wrappers and configuration (read-only). Empty for native
  // jobs.
  std::vector<ExecMount> mounts;
};

// Counts the results recorded in a CCACHE_STATSLOG file (ccache 4.x: a "# <input>" line
// per call followed by one counter name per line). A call is a hit when it holds
// direct_cache_hit or preprocessed_cache_hit, a miss when it holds cache_miss, and
// uncacheable otherwise.
farm::v1::CompileCacheStats ParseStatsLog(const std::string& text);

// "compile cache: 12 hits, 0 misses (100%)", plus ", 1 uncacheable call" when there were.
std::string DescribeCacheStats(const farm::v1::CompileCacheStats& stats);

// Answers whether an executable file is at `path` where a job's build runs (for a
// container executor: in the job's image); an error when that cannot be checked.
using ExecutableCheck = std::function<Result<bool>(const std::string& path)>;

class CompileCache {
 public:
  // Looks for ccache on the PATH of `worker_env`. On success returns the cache; when
  // ccache is missing or the options turn it off, a cache that is not available and says
  // why (logged once here). Fails only when the tool directory cannot be made.
  static Result<std::unique_ptr<CompileCache>> Create(const CompileCacheOptions& options,
                                                      const EnvMap& worker_env);

  bool available() const { return !ccache_.empty(); }
  const std::string& ccache_path() const { return ccache_; }
  const CompileCacheOptions& options() const { return options_; }

  // Sets up the cache in `env`, the build environment of a job in workspace `ws`, with
  // the namespace `namespace_id` farmd named for the job (a job without a valid one builds
  // uncached: the worker never guesses a namespace). For a
  // container executor (`executor` other than "native") the result's mounts name the
  // cache and wrapper directories to mount; the wrappers call this worker's ccache path,
  // so the image must have ccache there (the hostusr image has the host's /usr).
  // `in_image` (container jobs) checks that path in the image first: without ccache there
  // the cache is off and the note says so. Unchecked, an image without it still builds
  // uncached: a masquerade link that leads nowhere is skipped by PATH lookup and the nvcc
  // wrapper runs nvcc itself. When the recipe, the worker or the image turns the cache
  // off, sets CCACHE_DISABLE=1 so a build that calls ccache itself does not use the cache
  // either. On success `used` says whether compiles go through the cache; when the cache
  // cannot be set up (the shadow toolkit cannot be written) the job builds without it and
  // the note says why.
  JobCacheUse PrepareJob(const farm::v1::Recipe& recipe, const std::string& namespace_id,
                         const std::string& ws, const std::string& executor, EnvMap& env,
                         const ExecutableCheck& in_image = nullptr);

  // Reads the job's statistics once its build has ended and removes the job's wrappers;
  // nullopt when the job did not use the cache. A build that compiled nothing (or left no
  // readable log) reports zeros.
  static std::optional<farm::v1::CompileCacheStats> FinishJob(const JobCacheUse& use);

 private:
  CompileCache(CompileCacheOptions options, std::string ccache, std::string why_not)
      : options_(std::move(options)), ccache_(std::move(ccache)), why_not_(std::move(why_not)) {}
  Result<std::string> ShadowToolkit(const std::string& cuda_home);
  // Writes the job's configuration and wrappers into `job_dir`; the paths given are as
  // the build sees them (the sandbox's /farm/job for the workspace). A non-empty
  // `hash_namespace` becomes ccache's namespace (added to every hash).
  Status WriteJobTools(const std::string& job_dir, const std::string& ns,
                       const std::string& base_dir, const std::string& stats_log,
                       const std::string& hash_namespace) const;
  JobCacheUse UseCache(const std::string& ws, const std::string& job_dir,
                       const std::string& cuda_home, const std::string& shadow, EnvMap& env);
  static JobCacheUse Off(const std::string& why, EnvMap& env);
  // Why a container job's image cannot use the cache ("" when it can).
  std::string ImageWhyOff(const std::string& executor, const ExecutableCheck& in_image) const;

  const CompileCacheOptions options_;
  const std::string ccache_;            // absolute path; empty when unavailable
  const std::string why_not_;           // why the cache is unavailable
  std::vector<std::string> compilers_;  // the masqueraded compilers the worker has
  std::mutex mu_;
  std::map<std::string, std::string> shadows_;  // guarded by mu_: CUDA_HOME -> shadow
};

// Ends one job's use of the cache on every way out of its build: Finish reads the
// statistics (CompileCache::FinishJob) once the build ended; a guard destroyed before
// that, on an early return, still takes the job's wrappers away. Not copyable.
class JobCacheGuard {
 public:
  explicit JobCacheGuard(JobCacheUse use) : use_(std::move(use)) {}
  ~JobCacheGuard() {
    if (!finished_) CompileCache::FinishJob(use_);
  }
  JobCacheGuard(const JobCacheGuard&) = delete;
  JobCacheGuard& operator=(const JobCacheGuard&) = delete;

  const JobCacheUse& use() const { return use_; }
  // CompileCache::FinishJob, once; nullopt after the first call.
  std::optional<farm::v1::CompileCacheStats> Finish() {
    if (finished_) return std::nullopt;
    finished_ = true;
    return CompileCache::FinishJob(use_);
  }

 private:
  JobCacheUse use_;
  bool finished_ = false;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_CACHE_COMPILE_CACHE_H_
