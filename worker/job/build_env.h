// The environment a build command runs with, and the choices behind it (which Python,
// which CUDA toolkit, how many parallel compile jobs). Pure functions: callers pass in
// the worker's own environment and the probed capabilities. Safe from any thread.
//
// Only a small allow-list of the worker's variables reaches a build, so neither the
// worker token nor the enrollment token can leak into a build log or a wheel.
#ifndef FARM_WORKER_JOB_BUILD_ENV_H_
#define FARM_WORKER_JOB_BUILD_ENV_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "farm/v1/worker.pb.h"
#include "worker/exec/executor.h"

namespace farm::agent {

// The worker variables a build may see (PATH, HOME, LANG, TMPDIR, ...).
const std::vector<std::string>& AllowedWorkerEnv();

// Returns the allow-listed subset of `worker_env`.
EnvMap BaseEnv(const EnvMap& worker_env);

// Parallel compile jobs: min(cores, floor((0.85 * available GiB - reserved GiB) /
// gb_per_job)), at least 1. `gb_per_job` <= 0 means the recipe default of 4. On a
// unified-memory host (GB10) `reserved_bytes` is the memory GPU validations hold there
// (ValidationReserveGb): compile jobs and GPU share one budget.
int ComputeMaxJobs(int cores, int64_t available_bytes, double gb_per_job,
                   int64_t reserved_bytes = 0);

// The memory `job`'s GPU validation holds on a worker with `caps`, in GiB: the recipe's
// validation.gpu_memory_gb when the worker's GPU shares the host memory (unified), the
// recipe names a validation script and a GPU here runs the cell's arch list; else 0.
double ValidationReserveGb(const farm::v1::JobAssignment& job, const farm::v1::Capabilities& caps);

// The WSL2 allocator setting the notes needed for PyTorch (the native backend; the
// cudaMallocAsync one broke CUDA graphs and checkPoolLiveAllocations there).
inline constexpr char kWsl2AllocConf[] =
    "backend:native,max_split_size_mb:128,expandable_segments:true";

// True when the cell's arch list targets compute capability 12.1 (sm_121 / sm_121a).
bool TargetsSm121(const farm::v1::MatrixCell& cell);

// Returns the interpreter for `cell` (python version, and torch prefix when set), the
// first match in probe order. NotFound listing what the worker has otherwise.
Result<farm::v1::PythonInterpreter> SelectPython(const farm::v1::MatrixCell& cell,
                                                 const farm::v1::Capabilities& caps);

// Returns the toolkit whose version is cell.cuda (or starts with it); the first toolkit
// when the cell names none; an empty toolkit when the worker has none and none is asked.
Result<farm::v1::CudaToolkit> SelectToolkit(const farm::v1::MatrixCell& cell,
                                            const farm::v1::Capabilities& caps);

struct JobEnvInputs {
  const farm::v1::JobAssignment* job = nullptr;
  EnvMap worker_env;           // the worker's own environment (filtered here)
  std::string venv_dir;        // <ws>/venv
  std::string wheel_dir;       // FARM_WHEEL_DIR
  std::string tmp_dir;         // TMPDIR of the build
  std::string python_version;  // of the chosen interpreter
  farm::v1::CudaToolkit toolkit;
  int cores = 1;
  int64_t available_memory_bytes = 0;
  std::vector<std::string> secrets;  // values that must never appear in the environment
  int64_t source_date_epoch = 0;     // SourceDateEpoch of the source; 0: not set
  bool wsl2 = false;                 // the worker runs in WSL2 (Capabilities.wsl2)
  int64_t reserved_bytes = 0;        // unified memory held for GPU validations (MAX_JOBS)
};

// Builds the environment: allow-listed worker variables < recipe env < assignment env <
// the FARM_* variables, VIRTUAL_ENV, PATH (venv/bin, CUDA bin, then the rest), CUDA_HOME,
// TORCH_CUDA_ARCH_LIST and MAX_JOBS (unless the recipe or assignment sets it;
// NVCC_THREADS too when the recipe mentions it). Any variable whose value contains a
// secret is dropped. TRITON_PTXAS_PATH names the chosen toolkit's ptxas when the cell
// targets sm_121 (Triton's bundled ptxas rejects sm_121a). On WSL2 (where CUDA_HOME
// matters as everywhere) the Windows driver's directory goes first on LD_LIBRARY_PATH
// (then the toolkit's lib64) and on LIBRARY_PATH, so libcuda loads and `-lcuda` links, and
// PYTORCH_CUDA_ALLOC_CONF is kWsl2AllocConf; a value the recipe or assignment sets wins
// (the library paths keep theirs after the driver's directory).
// For reproducible wheels (docs/reproducibility.md) it also sets
// SOURCE_DATE_EPOCH (when known) and PYTHONHASHSEED=0 unless the recipe sets them, and
// appends nvcc's -objtemp to NVCC_APPEND_FLAGS so intermediate file names (which nvcc
// writes into the objects) come from the object path instead of the process id. A recipe's
// fatbin_compression appends --compress-mode=<mode> there too when the toolkit is CUDA
// 12.8 or later (unless the flags name a compress mode already).
// Without a toolkit (in.toolkit has no path) every PATH directory holding an nvcc is left
// out (PathWithoutToolkits), the recipe's own PATH included.
EnvMap BuildJobEnv(const JobEnvInputs& in);

// The job log's line about the recipe's fatbin_compression with `toolkit`: the flag given
// to nvcc, or why this toolkit keeps its default; "" when the recipe sets none.
std::string FatbinCompressionNote(const farm::v1::Recipe& recipe,
                                  const farm::v1::CudaToolkit& toolkit);

// `path` (a PATH value) without the directories that hold an executable `nvcc`, in order;
// those go to `*dropped` when given.
std::string PathWithoutToolkits(const std::string& path,
                                std::vector<std::string>* dropped = nullptr);

// The time the source was last changed, for SOURCE_DATE_EPOCH: the commit time of a git
// checkout (git log -1 --format=%ct), else the newest modification time of a file in the
// tree (at most 200,000 entries are looked at). 0 when neither is known.
int64_t SourceDateEpoch(ProcessRunner& runner, const std::string& source_dir);

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_BUILD_ENV_H_
