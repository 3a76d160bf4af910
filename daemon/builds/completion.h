// What the end of an attempt means (a worker's CompleteJob): the rules between the
// worker's report and the store's transition (store::JobLeases::CompleteAttempt):
//   - a worker reports only on an attempt it holds;
//   - a build attempt that reports success but uploaded no wheel failed its build;
//   - a stable-ABI build's success queues its validations in the other torches of its
//     matrix (sched/fanout.h), and such a validation that does not prove its torch fails;
//   - a validation report is signed (attest/), and a signing failure only logged: the
//     report is stored and a wheel without its signature fails --require-validated-arch;
//   - the recipe's retry policy (attempts, build failures retried, back-off) applies, and
//     infrastructure failures get more attempts with a growing back-off (sched/retry.h);
//   - when the job ended, the jobs waiting for its wheels are settled at once.
//
// Thread-safe: the store ports, the clock, the recipe cache and the signer are.
#ifndef FARM_DAEMON_BUILDS_COMPLETION_H_
#define FARM_DAEMON_BUILDS_COMPLETION_H_

#include <cstdint>
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/builds/recipe_cache.h"
#include "daemon/store/ports/artifact_store.h"
#include "daemon/store/ports/build_graph_store.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/job_leases.h"
#include "daemon/store/ports/validation_jobs.h"
#include "farm/v1/worker.pb.h"

namespace farm::builds {

// A worker may report on (or fetch the source or inputs of) an attempt only when it was
// leased that attempt: PermissionDenied otherwise.
Status CheckHolds(store::BuildReader& builds, const std::string& worker_id, int64_t job_id,
                  int attempt);

// Signs the validation report of `job`'s attempt `attempt`, made by `worker_id`.
using ValidationSigner =
    std::function<Status(const store::JobRow& job, int attempt,
                         const farm::v1::ValidationReport& report, const std::string& worker_id)>;

struct CompletionDeps {
  store::BuildReader* builds = nullptr;
  store::ArtifactStore* artifacts = nullptr;
  store::JobLeases* leases = nullptr;
  store::BuildGraphStore* graph = nullptr;
  RecipeCache* recipes = nullptr;
  const Clock* clock = nullptr;
  ValidationSigner sign_validation;  // empty: nothing is signed
  // The key of a job that consumes wheels (build_key.h), for settling held jobs.
  store::InputsKeyFn inputs_key;
};

class Completer {
 public:
  explicit Completer(CompletionDeps deps) : deps_(std::move(deps)) {}

  // Records the end that worker `worker_id` reports in `req` and returns the job's new
  // state (farm.v1.JobState). Fails like CheckHolds and CompleteAttempt; nothing is
  // written then. When the jobs the ended job releases cannot be settled, the completion
  // stands and `release_error` says why (the sweeper settles them later).
  Result<int> Complete(const std::string& worker_id, const farm::v1::CompleteJobRequest& req,
                       Status* release_error);

 private:
  // The report the store records: the worker's, with the rules above applied.
  Result<store::CompletionReport> Report(const std::string& worker_id,
                                         const farm::v1::CompleteJobRequest& req,
                                         const store::JobRow& job, int64_t now_ms);

  CompletionDeps deps_;
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_COMPLETION_H_
