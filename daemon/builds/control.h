// What people ask of builds, jobs and workers once they run: cancel a build, retry a job,
// drain or undrain a worker, validate a wheel again. The gRPC API (farmctl) and the REST
// API (the dashboard) both call these, so each rule is written once
// (docs/security.md, "Who may change what"):
//   - the role: a submitter for builds, jobs and wheels, an admin for workers;
//   - the owner: a build, its jobs and its wheels are changed only by the build's
//     submitter (while it may still build under the recipe's name) or an admin;
//   - the record: every request by a known principal leaves one audit record with its
//     outcome, refusals included.
// A front end authenticates the caller (a call without a valid token has no principal
// and is refused before reaching these) and turns the answer into its own format.
//
// Thread-safe: the store ports, the clock and the recorder are.
#ifndef FARM_DAEMON_BUILDS_CONTROL_H_
#define FARM_DAEMON_BUILDS_CONTROL_H_

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/audit/audit_log.h"
#include "daemon/auth/token_authority.h"
#include "daemon/store/ports/artifact_store.h"
#include "daemon/store/ports/build_control.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/recipe_name_store.h"
#include "daemon/store/ports/validation_jobs.h"
#include "daemon/store/ports/worker_store.h"

namespace farm::builds {

using auth::Principal;

struct ControlDeps {
  store::BuildReader* builds = nullptr;
  store::BuildControl* control = nullptr;
  store::ArtifactStore* artifacts = nullptr;
  store::ValidationJobs* validations = nullptr;
  store::WorkerStore* workers = nullptr;
  store::RecipeNameStore* names = nullptr;
  const Clock* clock = nullptr;
  audit::Recorder* audit = nullptr;  // null: nothing is recorded
  int max_attempts = 3;              // of a validation job queued by Revalidate
};

class Control {
 public:
  explicit Control(const ControlDeps& deps) : deps_(deps) {}

  // Cancels build `build_id`: its pending jobs end, its running ones are told to stop
  // (store::BuildControl::CancelBuild). NotFound for no such build; FailedPrecondition
  // for one that has ended.
  Status CancelBuild(const Principal& who, int64_t build_id);
  // Queues failed or cancelled job `job_id` again (store::BuildControl::RetryJob).
  Status RetryJob(const Principal& who, int64_t job_id);
  // Sets (or, with `drain` false, clears) the drain request of the worker named by its id
  // or by its name (which must then be unique: InvalidArgument otherwise, NotFound for
  // none). Returns the worker's id.
  Result<std::string> DrainWorker(const Principal& who, const std::string& id_or_name, bool drain);
  // Queues a validation job for the wheel `artifact_id` of a succeeded build job, in the
  // job's cell, on a GPU its wheels run on (FailedPrecondition for a wheel of a job that
  // did not succeed or of an attempt that does not count). Returns the job queued.
  Result<store::JobRow> RevalidateArtifact(const Principal& who, int64_t artifact_id);

 private:
  Result<std::string> ResolveWorker(const std::string& id_or_name);

  ControlDeps deps_;
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_CONTROL_H_
