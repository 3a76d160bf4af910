// The scheduler's reading of stored rows: workers with their capabilities parsed, and a
// pending job's cell and needs, for placement and its explanations. Pure functions.
#ifndef FARM_DAEMON_SCHED_ROWS_H_
#define FARM_DAEMON_SCHED_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "daemon/sched/placement.h"
#include "daemon/sched/waiting.h"
#include "daemon/store/store.h"

namespace farm::sched {

// Every stored worker with its capabilities parsed, for placement explanations.
std::vector<FleetWorker> FleetOf(const std::vector<store::WorkerRow>& rows);
// Why the pending job `row` waits (ExplainWaiting with its cell and backoff); `peers` is
// AvailablePeers(fleet).
Waiting ExplainPendingJob(const store::JobRow& row, const std::vector<FleetWorker>& fleet,
                          const std::vector<PeerWorker>& peers, int64_t now_ms,
                          size_t max_able_names = std::numeric_limits<size_t>::max());

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_ROWS_H_
