// Placement: whether a worker can build a matrix cell, and if not, which requirement it
// misses. First fit: farmd leases the oldest job of the highest priority that the asking
// worker can run. Pure functions over API messages; thread-safe.
#ifndef FARM_DAEMON_SCHED_PLACEMENT_H_
#define FARM_DAEMON_SCHED_PLACEMENT_H_

#include <string>
#include <vector>

#include "farm/v1/types.pb.h"

namespace farm::sched {

// What a job asks of a worker's memory, in GiB: one compile job of its recipe
// (gb_per_compile_job) and the GPU memory its validation script needs.
struct JobMemory {
  double compile_gb = 0;     // 0 skips the memory check
  double validation_gb = 0;  // counted only where the worker's GPU validates the cell
};

// The share of a host's RAM builds may plan with; MAX_JOBS uses the same share.
inline constexpr double kUsableMemoryFraction = 0.85;

// True when a GPU of `caps` shares the host's memory (GB10): compile jobs and GPU
// validations then draw on one budget.
bool HasUnifiedMemory(const farm::v1::Capabilities& caps);

// What a provisioning worker may fetch, once farmd knows what it serves: a worker whose
// toolkits come only through farmd (Provisioning.toolkits_through_farm) fetches none
// where farmd serves no redist tree (`farm_serves_toolkits` false). Called on the
// capabilities a worker registers or reports, before they are stored.
void SettleProvisioning(bool farm_serves_toolkits, farm::v1::Capabilities* caps);

// Returns "" when a worker with `caps` meets every build requirement of `cell`, else one
// sentence naming the first requirement it misses ("no Python 3.12 (has 3.11)"): not
// quarantined, the CPU of the cell's platform (CellPlatform: linux_x86_64 when the cell
// names none; "manylinux_2_28_aarch64" wants an aarch64 worker), a Python (with torch), a
// toolkit of the cell's CUDA version that emits every target of the arch list ("CUDA 12.8
// cannot emit sm_121a"), and memory for at least one compile job. On a unified-memory
// worker that compile job shares the RAM with GPU validations: the job's own (when the
// worker validates the cell) and `held_gb`, what the jobs it already runs hold
// (HeldValidationGb). A cell whose recipe asks for provisioned environments
// (needs.provisioned) needs a worker that provisions instead of the cell's Python, and
// no toolkit where that worker fetches toolkits or the recipe compiles no CUDA
// (needs.no_toolkit).
std::string MissingRequirement(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                               const JobMemory& memory = {}, double held_gb = 0,
                               const farm::v1::JobNeeds& needs = {});

// A job a worker runs: its cell and what its validation needs.
struct RunningJob {
  farm::v1::MatrixCell cell;
  double validation_gb = 0;
};

// The GPU validation memory the jobs of a unified-memory worker hold, in GiB: each job
// holds its validation's memory for as long as it runs when the worker's GPU validates
// its cell, so the MAX_JOBS a build derives never depends on which job validates first.
// 0 on a worker with its own GPU memory.
double HeldValidationGb(const farm::v1::Capabilities& caps, const std::vector<RunningJob>& jobs);

// True when `caps` has a GPU the cell's wheel will load on (farm::arch::RunsOn of its arch
// list), so the worker can validate what it builds. A cell without arch targets needs any
// GPU.
bool CanValidate(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps);

// Workers whose capabilities give equal keys get the same answer (and the same reason) from
// every function here, for any cell, needs and peers; ValidationBlocker's exclusion by
// worker id aside. The key leaves out what identifies a host (hostname, GPU uuids and
// indexes) and what changes from probe to probe (free disk), so a fleet of alike hosts is
// a handful of classes. Fields it does not know of are kept: it never merges hosts that
// place differently.
std::string PlacementClassKey(const farm::v1::Capabilities& caps);

// A worker other than the asking one that may take jobs now.
struct PeerWorker {
  std::string name;
  farm::v1::Capabilities caps;
  std::string id;
};

// Placement with validation in mind: "" when the worker with `caps` may take the cell now.
// A worker that meets the build requirements but has no GPU the wheel serves leaves the
// cell to a peer that can both build and validate it ("left for gb10-1, whose GPU can
// validate it"); with no such peer it builds, and validation waits for hardware. A build
// that needs its target GPU (needs.target_gpu) runs only where CanValidate holds, and the
// reason names the GPUs it needs and those the worker has. `memory` and `held_gb` are the
// asking worker's, as for MissingRequirement; peers are judged on the job's memory alone.
std::string PlacementBlocker(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                             const std::vector<PeerWorker>& peers,
                             const farm::v1::JobNeeds& needs = {}, const JobMemory& memory = {},
                             double held_gb = 0);

// "" when the worker `worker_id` with `caps` may run a validation job of `cell`'s wheels:
// not quarantined, the cell's platform and Python (with its torch), a GPU whose compute
// capability is in needs.gpu_ccs (any GPU when that is empty), and not one of
// needs.exclude_workers. Validation compiles nothing: no toolkit or compile RAM is needed.
// With needs.provisioned (a recipe with `environment:`) a worker that provisions stands for
// the cell's Python: it makes the cell's Python and torch as for a build.
// Otherwise the first requirement it misses ("no GPU the wheels run on: they need cc 12.0,
// this worker has NVIDIA H100 80GB HBM3 (cc 9.0)").
std::string ValidationBlocker(const farm::v1::MatrixCell& cell, const farm::v1::JobNeeds& needs,
                              const farm::v1::Capabilities& caps, const std::string& worker_id);

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_PLACEMENT_H_
