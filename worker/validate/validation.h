// Proving a built wheel on this worker (kernels/VALIDATION.md): the wheels of the attempt
// are installed with --no-deps (plus the recipe's pinned runtime requirements) into a
// fresh virtual environment, the recipe's modules are imported there from a directory
// outside the source tree, and the recipe's validation script runs on a GPU whose compute
// capability the wheel serves. With no such GPU here the state is pending hardware, never
// passed. Pure helpers are exposed for tests; ValidateWheels runs on the job's thread and
// registers each child with the job's JobControl so a cancel stops it.
#ifndef FARM_WORKER_VALIDATE_VALIDATION_H_
#define FARM_WORKER_VALIDATE_VALIDATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "farm/v1/worker.pb.h"
#include "worker/job/build_env.h"
#include "worker/job/job_control.h"
#include "worker/job/workspace.h"

namespace farm::agent {

// The GPU of `caps` the wheel can be validated on: the first whose compute capability is
// in `manifest.runs_on`, or the first GPU at all when the wheel has no device code.
// nullopt when no GPU here serves the wheel.
std::optional<farm::v1::Gpu> ChooseValidationGpu(const farm::v1::Capabilities& caps,
                                                 const farm::v1::ArchManifest& manifest);

// Why no GPU here serves the wheel, for the report of a pending validation.
std::string NoGpuReason(const farm::v1::Capabilities& caps, const farm::v1::ArchManifest& manifest);

// The state an exit code of a validation script stands for: 0 passed, 3 and 5 pending
// hardware (no device, unsupported GPU), anything else failed.
farm::v1::ValidationState StateForExitCode(int exit_code);

// Builds the report from the script's exit code and its JSON report (schema
// farm.validation.v2, or v1; `json` may be empty or malformed when the script crashed). The
// state always follows the exit code, never the JSON's own claim. A case without
// throughput of its own (v1) takes its attention `tops` as throughput in TOPS, and its
// baseline is named from the report's "baseline.impl" and the case's dtype.
farm::v1::ValidationReport ParseValidationReport(const std::string& json, int exit_code);

// The recipe's speed threshold (ValidationSpec.min_speedup): a passed report whose timed
// case (throughput and baseline both known) ran below `min_speedup` times its baseline
// becomes failed, naming the case, the baseline and both figures. 0 checks nothing.
void ApplySpeedThreshold(double min_speedup, farm::v1::ValidationReport* report);

// The recipe's fast-path requirement (ValidationSpec.require_fast_path): in a passed
// report, every case that ran another implementation than the fast one its script names
// (or names neither) is marked failed, and the report becomes failed with the first such
// case, naming both implementations. false checks nothing.
void ApplyFastPathRequirement(bool required, farm::v1::ValidationReport* report);

// The structure and arch-manifest checks of a built wheel against its job's matrix cell
// (farm::wheel::CheckJobWheel), as the JobRunner's WheelHook. Fills header->manifest; on a
// broken rule FailedPrecondition with the problems ("arch-missing: pkg/_C.so: ... lacks
// sm_121a").
Status CheckWheelForJob(const farm::v1::JobAssignment& job, const std::string& wheel_path,
                        farm::v1::ArtifactHeader* header);

// How long a `pip install` into a job's environment may take (a torch wheel is gigabytes).
constexpr int64_t kInstallTimeoutMs = 10 * 60 * 1000;

struct ValidationInputs {
  const farm::v1::JobAssignment* job = nullptr;
  std::vector<std::string> wheels;  // the attempt's checked wheels
  farm::v1::ArchManifest manifest;  // of the wheel with device code
  std::string python;               // interpreter for the clean venv
  // The clean venv also sees `python`'s packages: for a provisioned cell, whose torch and
  // its requirements are the environment's (the same as system_site_packages does).
  bool sees_python_packages = false;
  std::string dir;                           // <ws>/validate, created here
  std::string build_dir;                     // source tree (after `subdirectory`)
  std::vector<std::string> find_links;       // where runtime requirements are found
  std::vector<std::string> required_wheels;  // wheels of required jobs (recipe `requires:`)
  EnvMap env;                                // the job's environment, venv not yet set
  farm::v1::Capabilities caps;
  std::string worker_id;
  int64_t timeout_ms = 20 * 60 * 1000;
};

// Runs the clean-room install, the imports and, when the recipe names a script and a GPU
// here serves the wheel, the script. On success returns the report (its state says how
// validation went: a failing kernel is a success of this function). Fails only for
// infrastructure trouble (no venv could be made, the job was stopped).
Result<farm::v1::ValidationReport> ValidateWheels(StepRunner& steps, ProcessRunner& runner,
                                                  JobControl* control, const LineCallback& on_line,
                                                  const ValidationInputs& in);

}  // namespace farm::agent

#endif  // FARM_WORKER_VALIDATE_VALIDATION_H_
