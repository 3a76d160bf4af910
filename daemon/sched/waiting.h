// Why a pending job waits, in words a release engineer can act on. Placement (placement.h)
// answers for one worker; this answers for the job over the whole fleet: which workers
// cannot take it and why, whether any registered worker ever could, and one sentence
// saying what would unblock it ("no worker has CUDA 12.8: provision one or drop the
// cell"). farmctl show / submit --follow and the dashboard print the same sentence. Pure
// functions over API messages; thread-safe.
#ifndef FARM_DAEMON_SCHED_WAITING_H_
#define FARM_DAEMON_SCHED_WAITING_H_

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "daemon/sched/placement.h"
#include "daemon/store/worker_state.h"
#include "farm/v1/types.pb.h"

namespace farm::sched {

// A registered worker as placement sees it.
struct FleetWorker {
  std::string id;
  std::string name;
  store::WorkerState state = store::WorkerState::kIdle;
  bool drain_requested = false;
  farm::v1::Capabilities caps;
  // Workers of one fleet with equal class (>= 0) have equal capabilities, so placement is
  // decided once per class; -1: unknown, decided per worker.
  int caps_class = -1;
};

// The job-level facts besides its cell.
struct PendingFacts {
  int64_t not_before_ms = 0;  // retry backoff; INT64_MAX while merged onto another job
  std::string note;           // the job's error text (why a merged job waits)
  int64_t now_ms = 0;
  bool validation = false;   // a validation job: ValidationBlocker decides, not placement
  farm::v1::JobNeeds needs;  // what the job needs beyond its cell
  // What one compile job and the validation need of a worker's memory. The memory the
  // workers' running jobs hold is left out: the reasons say what a worker lacks, not what
  // it is busy with.
  JobMemory memory;
  // Waiting::able keeps at most this many names; the summary shows six at most (a reply
  // that needs no more saves a string per able worker and job).
  size_t max_able_names = std::numeric_limits<size_t>::max();
};

// One worker that cannot take the job now, and why.
struct WorkerBlock {
  std::string worker_id;
  std::string worker_name;
  std::string reason;
};

struct Waiting {
  // No registered worker can take the job as the fleet stands (lost and draining workers
  // that could count as able): it will wait until the fleet or the matrix changes.
  bool unplaceable = false;
  std::string summary;               // one sentence, with what would unblock it
  std::vector<WorkerBlock> blocked;  // workers that cannot take it now
  std::vector<std::string> able;     // names of workers that can take it once free
  size_t able_count = 0;             // all of them, named in `able` or not
};

// `blocked` as a reply's worker -> reason entries that stay small in any fleet. Up to
// `max_entries` workers: one entry each, keyed "name (id)". More: one entry per distinct
// reason, keyed by its first worker and how many others share it ("gpu-1 (w-1) and 979
// other workers"), the most shared first; past `max_entries` reasons, one last entry counts
// the workers left out. Ordered as listed.
std::vector<std::pair<std::string, std::string>> ReasonEntries(
    const std::vector<WorkerBlock>& blocked, size_t max_entries);

// The fleet's workers that may take jobs now, for PlacementBlocker's validation rule.
std::vector<PeerWorker> AvailablePeers(const std::vector<FleetWorker>& fleet);

// Explains why the job with `cell` and `facts` waits, given every registered worker and
// `peers` (AvailablePeers of them). A job merged onto an identical job in flight says so
// (facts.note); when no worker can take it, it is unplaceable like the job it waits for,
// and the summary adds why.
Waiting ExplainWaiting(const farm::v1::MatrixCell& cell, const PendingFacts& facts,
                       const std::vector<FleetWorker>& fleet, const std::vector<PeerWorker>& peers);

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_WAITING_H_
