// CompileCache: the worker's ccache, shared by every job it runs. It puts the host
// compilers and nvcc of a job's build behind ccache and counts, per job, how many compiles
// the cache answered.
//
// Every job builds in a new workspace directory, so the job environment makes paths under
// the workspace relative (CCACHE_BASEDIR) and leaves the working directory out of the hash
// (CCACHE_NOHASHDIR); otherwise no compile would ever hit. Compilers reach ccache through
// a masquerade directory first on PATH (gcc, g++, cc, c++, ...); nvcc through a shadow
// CUDA_HOME whose bin/nvcc runs `ccache <real nvcc>` (setup.py files that call
// $CUDA_HOME/bin/nvcc themselves) and PYTORCH_NVCC (torch.utils.cpp_extension with ninja).
// Each job's compiles append to the job's own CCACHE_STATSLOG, so concurrent jobs sharing
// one cache directory are counted apart.
//
// Ownership: the Agent owns one CompileCache and hands JobRunners a pointer. Thread-safe:
// PrepareJob may run on several job threads at once (the tool directory is written under a
// mutex, once per toolkit).
#ifndef FARM_WORKER_AGENT_COMPILE_CACHE_H_
#define FARM_WORKER_AGENT_COMPILE_CACHE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "worker/agent/build_env.h"
#include "worker/agent/executor.h"

namespace farm::agent {

struct CompileCacheOptions {
  bool enabled = true;             // --no-ccache turns it off for every job
  std::string cache_dir;           // CCACHE_DIR, shared by all jobs of this worker
  std::string max_size = "20G";    // CCACHE_MAXSIZE (ccache's size syntax)
  std::string tools_dir;           // wrappers and shadow toolkits; rewritten at start
};

// How one job uses the cache: made by PrepareJob, read back by FinishJob.
struct JobCacheUse {
  bool used = false;
  std::string note;        // for the job log ("compile cache: ..."); may be empty
  std::string stats_log;   // the job's CCACHE_STATSLOG
  // What a container or sandbox must mount at the same path: the recipe's namespace of
  // the cache (read-write) and the wrappers (read-only). Empty for native jobs.
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

// Returns the first executable named `name` in the colon-separated `path`; empty if none.
std::string FindInPath(const std::string& name, const std::string& path);

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

  // Sets up the cache in `env`, the build environment of a job in workspace `ws`. For a
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
  JobCacheUse PrepareJob(const farm::v1::Recipe& recipe, const std::string& ws,
                         const std::string& executor, EnvMap& env,
                         const ExecutableCheck& in_image = nullptr);

  // Reads the job's statistics once its build has ended; nullopt when the job did not
  // use the cache. A build that compiled nothing reports zeros.
  static std::optional<farm::v1::CompileCacheStats> FinishJob(const JobCacheUse& use);

 private:
  CompileCache(CompileCacheOptions options, std::string ccache, std::string why_not)
      : options_(std::move(options)), ccache_(std::move(ccache)), why_not_(std::move(why_not)) {}
  Status MakeMasquerade(const std::string& path);  // at Create, before any job
  Result<std::string> ShadowToolkit(const std::string& cuda_home);
  JobCacheUse UseCache(const std::string& ws, const std::string& cache_dir,
                       const std::string& cuda_home, const std::string& shadow, EnvMap& env);
  // The recipe's own part of the cache: a build can only write (or poison) objects that
  // its own recipe's later builds read.
  std::string NamespaceDir(const farm::v1::Recipe& recipe) const;
  static JobCacheUse Off(const std::string& why, EnvMap& env);
  // Why a container job's image cannot use the cache ("" when it can).
  std::string ImageWhyOff(const std::string& executor, const ExecutableCheck& in_image) const;
  std::string MasqueradeDir() const { return options_.tools_dir + "/bin"; }

  const CompileCacheOptions options_;
  const std::string ccache_;   // absolute path; empty when unavailable
  const std::string why_not_;  // why the cache is unavailable
  std::mutex mu_;
  std::map<std::string, std::string> shadows_;  // guarded by mu_: CUDA_HOME -> shadow
};

}  // namespace farm::agent

#endif  // FARM_WORKER_AGENT_COMPILE_CACHE_H_
