// What one attempt of a job is given, and the steps both kinds of attempt take: the build
// attempt (build_attempt.h) and the validation attempt (validation_attempt.h) each hold an
// AttemptContext, which the JobRunner (job_runner.h) makes for the attempt. The steps fetch
// the source, the wheels of earlier jobs and the cell's environment, prove wheels on this
// host's GPU (validate/validation.h) and say how a stopped attempt ends. Used on the job's
// own thread only; other threads stop the job through its JobControl.
#ifndef FARM_WORKER_ATTEMPT_ATTEMPT_CONTEXT_H_
#define FARM_WORKER_ATTEMPT_ATTEMPT_CONTEXT_H_

#include <atomic>
#include <cstdint>
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
#include "worker/cache/compile_cache.h"
#include "worker/client/farm_client.h"
#include "worker/exec/executor.h"
#include "worker/job/build_env.h"
#include "worker/job/environments.h"
#include "worker/job/job_control.h"
#include "worker/job/log_shipper.h"
#include "worker/probe/probe.h"

namespace farm::agent {

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

// The worker's or the farm's trouble: retried (CAUSE_INFRASTRUCTURE).
Outcome Infra(const std::string& detail);

// A recipe that names what its source does not have fails once, as the build's failure.
Outcome RecipeError(const std::string& detail);

// The directory the build runs in: `src`, or the recipe's subdirectory of it, which must
// stay inside the source tree and exist. InvalidArgument (the recipe's error) saying what
// the tree holds otherwise.
Result<std::string> BuildDir(const std::string& src, const farm::v1::Recipe& recipe);

// What every container of a job shares: its workspace, the recipe's image, and the job's
// identity, from which a container executor names and labels the container.
ExecRequest JobContainerBase(const std::string& ws, const std::string& image, const EnvMap& env);

// For a job whose commands run in a container: checks a path in the recipe's image, in a
// throwaway container named and labelled after the job. Null for native jobs.
ExecutableCheck ImageCheckFor(Executor& executor, const std::string& ws, const std::string& image,
                              const EnvMap& env);

// How long a call to farmd about the attempt (a download, an upload, its report) is
// retried while farmd is unavailable, unless the worker is shutting down.
inline constexpr int64_t kReportRetryMs = 5 * 60 * 1000;

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

// The wheels of the jobs an attempt's job requires, as fetched: for the build venv and
// for validation.
struct InputWheels {
  std::string dir;
  std::vector<std::string> for_build;
  std::vector<std::string> for_validation;
};

class AttemptContext {
 public:
  AttemptContext(JobDeps deps, JobSettings settings, farm::v1::JobAssignment job,
                 std::shared_ptr<JobControl> control);

  const JobDeps& deps() const { return deps_; }
  const JobSettings& settings() const { return settings_; }
  const farm::v1::JobAssignment& job() const { return job_; }
  JobControl& control() const { return *control_; }
  // The wheels FetchInputs fetched (none before).
  const InputWheels& inputs() const { return inputs_; }
  // SourceDateEpoch of the source FetchAndPatch fetched, read before its patches; 0 before.
  int64_t source_date_epoch() const { return source_date_epoch_; }

  // The recipe's source in <ws>/src with its patches applied; errors say which step failed.
  Result<std::string> FetchAndPatch(LogShipper& log, const std::string& ws);
  // The job's own artifacts (a validation job's wheels) fetched into `dir`, each checked
  // against its sha256 and size; FailedPrecondition when the job names none.
  Result<std::vector<std::string>> DownloadWheels(LogShipper& log, const std::string& dir);
  // Fetches the wheels of the jobs this one requires (job().inputs()) into <ws>/inputs and
  // sorts them into inputs().
  Status FetchInputs(LogShipper& log, const std::string& ws);
  // The lease's environment, made or cloned from its snapshot into <ws>/venv
  // (provision.cc); ProvisioningOutcome says whose fault a failure is.
  Result<env::ProvisionedEnv> ProvisionEnvironment(LogShipper& log, const std::string& ws);
  Outcome ProvisioningOutcome(const Status& status) const;
  // Proves `wheels` in a clean venv made from `python` (validate/validation.h), where the
  // job's executor runs commands; the report says how it went. Fails only when validation
  // could not run.
  Result<farm::v1::ValidationReport> Validate(LogShipper& log, const JobEnvInputs& env_in,
                                              const std::string& build_dir,
                                              const std::string& python,
                                              const std::vector<std::string>& wheels,
                                              const farm::v1::ArchManifest& manifest);
  // Where the job's source tools (git, patches) run: inside the sandbox when the job's
  // executor is the sandbox (with the network for `network`), else on the host.
  std::unique_ptr<ProcessRunner> SourceRunner(const std::string& ws, bool network) const;
  // The worker's own copy of the job's outputs, outside the workspace: checked, labelled,
  // validated and uploaded from here, never from where the build left them.
  std::string OutputDir(const std::string& ws) const;
  // `base` with the cause and detail the JobControl was stopped with.
  Outcome StoppedOutcome(Outcome base) const;
  // The steady-clock deadline of a retried call to farmd: `normal_ms` from now, or a few
  // seconds while the worker shuts down.
  int64_t RetryDeadlineMs(int64_t normal_ms) const;

 private:
  Result<std::vector<std::string>> FetchArtifacts(
      LogShipper& log, const std::string& dir,
      const google::protobuf::RepeatedPtrField<farm::v1::Artifact>& artifacts);

  JobDeps deps_;
  JobSettings settings_;
  farm::v1::JobAssignment job_;
  std::shared_ptr<JobControl> control_;
  InputWheels inputs_;
  int64_t source_date_epoch_ = 0;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_ATTEMPT_ATTEMPT_CONTEXT_H_
