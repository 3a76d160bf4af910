// The rows of builds, jobs, attempts and artifacts, and the enums of their states: what
// several ports (build_reader.h, job_leases.h, build_control.h, ...) read and write.
// Numeric states use the values of the farm.v1 enums.
#ifndef FARM_DAEMON_STORE_PORTS_JOB_ROWS_H_
#define FARM_DAEMON_STORE_PORTS_JOB_ROWS_H_

#include <cstdint>
#include <string>

#include "daemon/store/job_state.h"

namespace farm::store {

// Values mirror farm.v1.AttemptCause.
enum AttemptCause : int {
  kCauseNone = 0,
  kCauseCompleted = 1,
  kCauseBuildFailed = 2,
  kCauseLostWorker = 3,
  kCauseTimedOut = 4,
  kCauseCancelled = 5,
  kCauseInfrastructure = 6,
  kCauseValidationFailed = 7
};

// Values mirror farm.v1.JobKind.
enum JobKind : int { kJobBuild = 1, kJobValidate = 2 };

// Values mirror farm.v1.ValidationState; kValidationUnknown marks artifacts stored before
// the state had a column of its own (their report has not been read yet).
enum ValidationStateValue : int {
  kValidationUnknown = -1,
  kValidationUnspecified = 0,
  kValidationNotRun = 1,
  kValidationPendingHardware = 2,
  kValidationPassed = 3,
  kValidationFailed = 4
};

struct BuildRow {
  int64_t id = 0;
  std::string recipe_name;
  std::string recipe;  // serialized farm.v1.Recipe
  BuildState state = kBuildQueued;
  int priority = 0;
  std::string submitted_by;
  std::string rejected_cells;
  int64_t created_ms = 0;
  int64_t finished_ms = 0;
  std::string source_sha256;  // the uploaded source archive it builds, "" for git
};

inline constexpr int kNotHeld = 0;
inline constexpr int kHeld = 1;
inline constexpr int kHeldForced = 2;  // built even when its key succeeded before

struct JobRow {
  int64_t id = 0;
  int64_t build_id = 0;
  std::string cell;  // serialized farm.v1.MatrixCell
  JobState state = kJobPending;
  int priority = 0;
  int attempt = 0;
  std::string worker_id;
  int64_t lease_expiry_ms = 0;
  bool cancel_requested = false;
  int64_t not_before_ms = 0;
  std::string error;
  std::string build_key;
  int64_t reused_from = 0;   // > 0: created succeeded with that job's artifacts
  int max_attempts = 3;      // infrastructure failures and lost workers are retried below this
  std::string cancelled_by;  // who cancelled it (a token's name), "" if nobody did
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int kind = kJobBuild;
  // kJobValidate: the build job and attempt whose artifacts it validates.
  int64_t target_job_id = 0;
  int target_attempt = 0;
  std::string needs;           // serialized farm.v1.JobNeeds
  int64_t compile_mib = 0;     // one compile job of its recipe; 0: not known
  int64_t validation_mib = 0;  // GPU memory its validation script needs; 0: none
  // A job of a recipe with `requires:` (ResolveHeldJobs): kHeld/kHeldForced while its
  // required jobs have not all succeeded; its build_key is empty until then and key_base
  // is the key without the wheels it consumes.
  int held = 0;
  std::string key_base;
  // A build job of a cell whose torch is a release candidate (wheel::IsTorchCandidate of its
  // build's recipe): its wheels stay out of the default index views (docs/index.md).
  bool release_candidate = false;
};

struct AttemptRow {
  int64_t job_id = 0;
  int number = 0;
  std::string worker_id;
  int cause = kCauseNone;
  std::string detail;
  int exit_code = 0;
  int64_t peak_rss_bytes = 0;
  int64_t log_acked_seq = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int64_t cache_hits = -1;  // compile cache; -1: the build ran without it
  int64_t cache_misses = -1;
  int64_t units_done = 0;   // compile progress last reported while it ran
  int64_t units_total = 0;  // 0: only units_done is known
};

struct ArtifactRow {
  int64_t id = 0;
  int64_t job_id = 0;
  int attempt = 0;
  std::string filename;
  std::string sha256;
  int64_t size = 0;
  std::string manifest;    // serialized farm.v1.ArchManifest
  std::string validation;  // serialized farm.v1.ValidationReport
  int64_t created_ms = 0;
  int validation_state = kValidationUnspecified;  // the report's state (ValidationStateValue)
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_JOB_ROWS_H_
