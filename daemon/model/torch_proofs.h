// The torches a stable-ABI wheel was proven with (docs/recipes.md, "Torch ABI"): a build
// job with JobNeeds.validate_in is validated in each of those cells, its own by the build
// and the others by the validation jobs queued when it succeeded (daemon/sched/fanout.h).
// Read for the API, `farmctl show` and the job page. Reads the store; thread-safe as the
// store is.
#ifndef FARM_DAEMON_MODEL_TORCH_PROOFS_H_
#define FARM_DAEMON_MODEL_TORCH_PROOFS_H_

#include <vector>

#include "common/status.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::model {

// The proofs of stable-ABI build job `job` (its wheels' own, or those of the job it was
// answered from): for each cell of its validate_in, in order, the build's own validation
// for its cell and the newest validation job of the counted attempt for each other cell.
// Empty for a job without validate_in.
Result<std::vector<farm::v1::TorchProof>> TorchProofs(store::Store& store,
                                                      const store::JobRow& job);

// Sets job->torch_proofs of `row`, and job->proven_torch: each torch, in matrix order, all of
// whose cells passed (with abi3 a torch has one cell per Python).
Status AddTorchProofs(store::Store& store, const store::JobRow& row, farm::v1::Job* job);

}  // namespace farm::model

#endif  // FARM_DAEMON_MODEL_TORCH_PROOFS_H_
