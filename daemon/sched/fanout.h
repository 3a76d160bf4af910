// The stable-ABI fan-out (docs/recipes.md, "Torch ABI"): a build job of a recipe with
// torch_abi.stable carries every cell its wheel is validated in (JobNeeds.validate_in,
// set at submit from recipe::PlanExpansion). When an attempt of it succeeds, farmd queues
// one validation job per other cell, in that cell (its Python and torch), in the
// transaction that records the success (CompletionReport::on_success), so a farmd killed
// at any moment neither loses nor repeats them. Each validation job proves the wheel with
// its torch alone: its report stays with its own job (the wheels keep the build cell's).
//
// The torches a wheel was proven with are read back from those jobs
// (model/torch_proofs.h). Functions over the store; thread-safe as the store is.
#ifndef FARM_DAEMON_SCHED_FANOUT_H_
#define FARM_DAEMON_SCHED_FANOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::sched {

// The validation jobs (not stored) that the success of attempt `attempt` of `job` queues:
// one in each cell of its validate_in but its own, over that attempt's wheels, each needing
// a GPU they run on (and a worker that provisions, for a provisioned recipe). Empty for a
// job without validate_in.
Result<std::vector<store::JobRow>> FanoutValidations(store::ArtifactStore& artifacts,
                                                     const store::JobRow& job, int attempt,
                                                     int64_t now_ms, int max_attempts);

// True for a validation job in another cell than its target's: a fan-out validation.
bool IsFanoutValidation(const store::JobRow& validation, const store::JobRow& target);

// The state a fan-out validation job's attempt ends in, from the cause and report the
// worker sent: only a passed report proves the torch; a report that is not (not run,
// pending hardware) fails the job with `detail` saying so. Other jobs' outcomes unchanged.
void FanoutOutcome(const farm::v1::ValidationReport& report, int* cause, std::string* detail);

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_FANOUT_H_
