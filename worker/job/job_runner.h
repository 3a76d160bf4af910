// JobRunner: one attempt of one job, from a fresh workspace to CompleteJob. It fetches
// the source, applies patches, makes the venv, runs the build command through the
// Executor with the recipe's environment, streams the log, uploads the wheels and
// reports how the attempt ended. Run() is called on the job's own thread and never
// throws; other threads stop the job through its JobControl.
#ifndef FARM_WORKER_JOB_JOB_RUNNER_H_
#define FARM_WORKER_JOB_JOB_RUNNER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/git_policy.h"
#include "common/process.h"
#include "common/sandbox/build_user.h"
#include "common/status.h"
#include "farm/v1/worker.pb.h"
#include "worker/agent/farm_client.h"
#include "worker/cache/compile_cache.h"
#include "worker/exec/executor.h"
#include "worker/job/build_env.h"
#include "worker/job/environments.h"
#include "worker/job/job_control.h"
#include "worker/job/log_shipper.h"
#include "worker/probe/probe.h"

namespace farm::agent {

class StepRunner;

// Called with each wheel before it is uploaded: the structure and arch-manifest checks
// (CheckWheelForJob in validation.h) plug in here and fill header->manifest. A non-OK
// status fails the attempt with CAUSE_VALIDATION_FAILED.
using WheelHook =
    std::function<Status(const farm::v1::JobAssignment& job, const std::string& wheel_path,
                         farm::v1::ArtifactHeader* header)>;

struct JobDeps {
  FarmClient* client = nullptr;
  ProcessRunner* runner = nullptr;   // helper tools (git, tar, venv)
  Executor* executor = nullptr;      // the build command
  CapabilityProbe* probe = nullptr;  // memory available at job start
  const Clock* clock = nullptr;
  WheelHook wheel_hook;  // may be empty: wheels are then taken unchecked
  // Makes the environment of a lease that carries one; null: such leases fail as
  // infrastructure (this worker does not provision).
  Environments* environments = nullptr;
};

struct JobSettings {
  std::string work_dir;
  bool keep_workspace = false;
  farm::v1::Capabilities caps;                       // the worker's latest probe
  EnvMap worker_env;                                 // filtered through the allow-list
  std::vector<std::string> secrets;                  // tokens that must not reach the build
  const std::atomic<bool>* shutting_down = nullptr;  // shortens completion retries
  std::vector<std::string> find_links;               // where validation finds runtime requirements
  std::string worker_id;                             // named in validation reports
  CompileCache* compile_cache = nullptr;         // the worker's ccache; null: builds run without
  int64_t log_buffer_bytes = int64_t{64} << 20;  // LogShipperOptions::max_buffered_bytes
  // On a unified-memory host: the GPU validation memory (GiB) the worker's other running
  // jobs hold (ValidationReserveGb of each job but `job_id`); empty: none.
  std::function<double(int64_t job_id)> validation_held_gb;
  // Who the sandbox runs the job's commands as: the workspace and the cache namespace are
  // given to that user (build_user.h). Default: the worker's own user.
  sandbox::BuildUser build_user;
  git::GitPolicy git;  // which git sources are cloned, and how
};

// How an attempt ended, as reported in CompleteJob.
struct Outcome {
  farm::v1::AttemptCause cause = farm::v1::CAUSE_COMPLETED;
  std::string detail;
  int exit_code = 0;
  int64_t peak_rss_bytes = 0;
  farm::v1::ValidationReport validation;                     // of the attempt's wheels
  std::optional<farm::v1::CompileCacheStats> compile_cache;  // when the build used the cache
};

// What a job's provisioning downloaded, from the provisioner's progress reports, and what
// its log says of each: every byte counts whether or not the index gave the file's size
// (a page without sizes reported 0.0 MB before), and a download of unknown size is said
// at doubling sizes instead of once per 8 MiB block. Not thread-safe (one job's sink).
class DownloadTally {
 public:
  // The text to add to the report's line, "" for a report that is not a download, or
  // nullopt when the line is left out.
  std::optional<std::string> Add(const env::ProvisionProgress& p);
  int64_t bytes() const { return bytes_; }

 private:
  static constexpr int64_t kFirstLineBytes = int64_t{8} << 20;
  struct Seen {
    int64_t done = 0;
    int64_t next_line = 0;
  };
  std::map<std::string, Seen> downloads_;  // by phase and message (one file)
  int64_t bytes_ = 0;
};

class JobRunner {
 public:
  JobRunner(JobDeps deps, JobSettings settings, farm::v1::JobAssignment job,
            std::shared_ptr<JobControl> control);

  // Runs the attempt and reports it to farmd. Returns what was reported.
  Outcome Run();

 private:
  // A JOB_VALIDATE assignment runs as a ValidationAttempt (validation_attempt.h), which
  // shares these helpers.
  friend class ValidationAttempt;

  Outcome Execute(LogShipper& log, const std::string& ws);
  Result<std::vector<std::string>> DownloadWheels(LogShipper& log, const std::string& dir);
  // Fetches `artifacts` from farmd into `dir`, each checked against its sha256 and size.
  Result<std::vector<std::string>> FetchArtifacts(
      LogShipper& log, const std::string& dir,
      const google::protobuf::RepeatedPtrField<farm::v1::Artifact>& artifacts);
  // Fetches the wheels of the jobs this one requires (job_.inputs()) into <ws>/inputs and
  // sorts them into inputs_.
  Status FetchInputs(LogShipper& log, const std::string& ws);
  // Installs inputs_.for_build into the build venv, from exactly those files.
  Status InstallBuildInputs(LogShipper& log, StepRunner& steps, const std::string& venv);
  Result<std::string> FetchAndPatch(LogShipper& log, const std::string& ws);
  // Where the job's source tools (git, patches) run: inside the sandbox when the job's
  // executor is the sandbox (with the network for `network`), else on the host.
  std::unique_ptr<ProcessRunner> SourceRunner(const std::string& ws, bool network) const;
  // The worker's own copy of the job's outputs, outside the workspace: checked, labelled,
  // validated and uploaded from here, never from where the build left them.
  std::string OutputDir(const std::string& ws) const;
  // The build attempt (job_build.cc): the venv, the job's environment and the cache, the
  // build command, then FinishWheels.
  struct BuildTools {
    farm::v1::PythonInterpreter python;
    farm::v1::CudaToolkit toolkit;                   // none when the recipe compiles no CUDA
    std::optional<env::ProvisionedEnv> provisioned;  // its cache pins last as long as it
  };
  Result<Outcome> Build(LogShipper& log, const std::string& ws, const std::string& src);
  // <ws>/venv is the provisioned environment's clone; the required wheels go in confined.
  Status UseProvisioned(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                        env::ProvisionedEnv provisioned, BuildTools* tools);
  // <ws>/venv made on the host interpreter and toolkit the cell names.
  Status MakeHostVenv(LogShipper& log, const std::string& ws, const EnvMap& tool_env,
                      BuildTools* tools);
  // What the job's environment is made from; `held_gb` gets the unified memory held for
  // GPU validation.
  JobEnvInputs EnvInputs(const std::string& ws, const BuildTools& tools, double* held_gb) const;
  Status UseCache(LogShipper& log, const JobCacheUse& cache_use);
  // Runs the build command; CAUSE_COMPLETED only when it exited 0 in time and unstopped.
  Result<Outcome> RunBuildCommand(LogShipper& log, const ExecRequest& req, JobCacheGuard& cache);
  // The lease's environment, made or cloned from its snapshot into <ws>/venv
  // (job_provision.cc); ProvisioningOutcome says whose fault a failure is.
  Result<env::ProvisionedEnv> ProvisionEnvironment(LogShipper& log, const std::string& ws);
  Outcome ProvisioningOutcome(const Status& status) const;
  Outcome FinishWheels(LogShipper& log, const JobEnvInputs& env_in, const std::string& build_dir,
                       const std::string& python, Outcome built);
  Result<farm::v1::ArtifactHeader> CheckOne(LogShipper& log, const std::string& path);
  Result<farm::v1::ArtifactHeader> Label(LogShipper& log, const std::string& path,
                                         const farm::v1::ArtifactHeader& header);
  Result<farm::v1::ValidationReport> Validate(LogShipper& log, const JobEnvInputs& env_in,
                                              const std::string& build_dir,
                                              const std::string& python,
                                              const std::vector<std::string>& wheels,
                                              const farm::v1::ArchManifest& manifest);
  Status UploadOne(LogShipper& log, const std::string& path, farm::v1::ArtifactHeader header);
  void Report(const Outcome& outcome, int64_t last_seq);
  Outcome StoppedOutcome(Outcome base) const;
  int64_t RetryDeadlineMs(int64_t normal_ms) const;

  // The wheels of required jobs, as fetched: for the build venv and for validation.
  struct InputWheels {
    std::string dir;
    std::vector<std::string> for_build;
    std::vector<std::string> for_validation;
  };

  JobDeps deps_;
  JobSettings settings_;
  InputWheels inputs_;
  // SourceDateEpoch of the source as fetched, before patches (which `git apply` writes now).
  int64_t source_date_epoch_ = 0;
  farm::v1::JobAssignment job_;
  // The torch of the provisioned environment the build ran in ("" without one): the
  // wheel's torch requirement names it.
  std::string provisioned_torch_;
  std::shared_ptr<JobControl> control_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_JOB_RUNNER_H_
