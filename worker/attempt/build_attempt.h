// BuildAttempt: one attempt of a build job, for the JobRunner that leased it. The recipe's
// source is fetched and patched, the venv made (the cell's provisioned environment when
// the lease carries one, else a venv on the probed interpreter), the job's environment
// and compile cache set up, and the recipe's build command run through the job's
// executor. The wheels it leaves are copied out of the workspace, checked, labelled,
// validated on this host's GPU and uploaded; wheels that fail validation are uploaded
// with their report but fail the job. Runs on the job's thread; not shared between
// threads.
#ifndef FARM_WORKER_ATTEMPT_BUILD_ATTEMPT_H_
#define FARM_WORKER_ATTEMPT_BUILD_ATTEMPT_H_

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/attempt/attempt_context.h"

namespace farm::agent {

class StepRunner;

class BuildAttempt {
 public:
  // `ctx` (the attempt's context) must outlive this.
  explicit BuildAttempt(AttemptContext& ctx) : ctx_(ctx) {}

  // Runs the attempt in workspace `ws`; returns how it ended (the JobRunner reports it).
  Outcome Run(LogShipper& log, const std::string& ws);

 private:
  struct BuildTools {
    farm::v1::PythonInterpreter python;
    farm::v1::CudaToolkit toolkit;                   // none when the recipe compiles no CUDA
    std::optional<env::ProvisionedEnv> provisioned;  // its cache pins last as long as it
  };
  // The venv, the job's environment and the cache, the build command, then FinishWheels.
  Result<Outcome> Build(LogShipper& log, const std::string& ws, const std::string& src);
  // <ws>/venv is the provisioned environment's clone; the required wheels go in confined.
  Status UseProvisioned(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                        env::ProvisionedEnv provisioned, BuildTools* tools);
  // <ws>/venv made on the host interpreter and toolkit the cell names.
  Status MakeHostVenv(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                      BuildTools* tools);
  // Installs the required wheels (AttemptContext::inputs) into the build venv, from
  // exactly those files.
  Status InstallBuildInputs(LogShipper& log, StepRunner& steps, const std::string& venv);
  // What the job's environment is made from; `held_gb` gets the unified memory held for
  // GPU validation.
  JobEnvInputs EnvInputs(const std::string& ws, const BuildTools& tools, double* held_gb) const;
  Status UseCache(LogShipper& log, const JobCacheUse& cache_use);
  // Runs the build command; CAUSE_COMPLETED only when it exited 0 in time and unstopped.
  Result<Outcome> RunBuildCommand(LogShipper& log, const ExecRequest& req, JobCacheGuard& cache);
  // Checks every wheel, validates them together, uploads them and says how the attempt
  // ended.
  Outcome FinishWheels(LogShipper& log, const JobEnvInputs& env_in, const std::string& build_dir,
                       const std::string& python, Outcome built);
  Result<farm::v1::ArtifactHeader> CheckOne(LogShipper& log, const std::string& path);
  Result<farm::v1::ArtifactHeader> Label(LogShipper& log, const std::string& path,
                                         const farm::v1::ArtifactHeader& header);
  Status UploadOne(LogShipper& log, const std::string& path, farm::v1::ArtifactHeader header);

  AttemptContext& ctx_;
  // The torch of the provisioned environment the build ran in ("" without one): the
  // wheel's torch requirement names it.
  std::string provisioned_torch_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_ATTEMPT_BUILD_ATTEMPT_H_
