// A new torch proven without a rebuild (docs/recipes.md, "A new torch proven without a
// rebuild"): when a torch watch sees a release, the stable-ABI wheels its schedule's
// recipe already has (the build jobs of the recipe's newest succeeded build) are validated
// with it instead of rebuilt. For each such wheel whose floor (torch_abi.stable) admits
// the release and whose CUDA variant the release was published for, farmd queues one
// validation job per cell of its group with the release's torch (its Python, CUDA and
// platform), in an environment resolved for that release like a cell's (the locker), and
// keyed in the store (NewTorchProofs), so a farmd killed at any moment queues nothing twice.
// Per-torch wheels (no stable floor) are never offered a new torch: the watch builds them.
//
// The job's outcome is the wheel's proof with that torch (model/torch_proofs.h), a
// coverage cell and a feed entry; a failed proof keeps the wheel out of that torch's
// index views. Thread-safe as its store and locker are.
#ifndef FARM_DAEMON_BUILDS_NEW_TORCH_H_
#define FARM_DAEMON_BUILDS_NEW_TORCH_H_

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/cron/runner.h"
#include "daemon/locks/env_locker.h"
#include "daemon/store/store.h"

namespace farm::builds {

// One release a watch saw: "2.12.0" on index "cu130".
struct NewTorch {
  std::string version;
  std::string variant;
};

// The torch releases of a watch's new items ("torch cu130 2.12.0").
std::vector<NewTorch> NewTorchesOf(const std::vector<cron::WatchItem>& items);

// The cells in which stable-ABI build job `job` (of a build of `recipe`) is proven with
// `torch`: one per distinct Python, CUDA, arch list and platform of its validate_in, with
// the release's minor as torch. Empty when the recipe has no stable floor, the floor does
// not admit the release, the job's CUDA is not the release's variant, or its validate_in
// already has that minor (the build proved it).
std::vector<farm::v1::MatrixCell> NewTorchCells(const farm::v1::Recipe& recipe,
                                                const store::JobRow& job, const NewTorch& torch);

// `recipe` with environment.torch mapping the release's minor to it: what the environment
// of a proof's cell is resolved from (the build's recipe does not know the release).
farm::v1::Recipe WithTorchRelease(farm::v1::Recipe recipe, const std::string& version);

class NewTorchProver final : public cron::TorchProver {
 public:
  // `store` and `clock` outlive this; `locker` may be null until farmd's HTTP side listens
  // (SetLocker), and a provisioned recipe then fails to be proven (FailedPrecondition).
  NewTorchProver(store::Store* store, const Clock* clock, int max_attempts)
      : store_(store), clock_(clock), max_attempts_(max_attempts) {}
  void SetLocker(locks::EnvLocker* locker) { locker_ = locker; }

  // covers_all when every release of `items` has at least one wheel to prove.
  Result<Outcome> ProveNewTorches(const farm::v1::SubmitBuildRequest& req,
                                  const std::vector<cron::WatchItem>& items) override;

 private:
  // The succeeded stable-ABI build jobs of the newest succeeded build of `name` (a job
  // answered from an earlier one stands for that one), with that build's recipe.
  Result<std::vector<std::pair<store::JobRow, farm::v1::Recipe>>> Wheels(const std::string& name);
  Status Queue(const store::JobRow& job, const farm::v1::Recipe& recipe, const NewTorch& torch,
               const farm::v1::MatrixCell& cell, Outcome* out);

  store::Store* store_;
  const Clock* clock_;
  int max_attempts_;
  locks::EnvLocker* locker_ = nullptr;
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_NEW_TORCH_H_
