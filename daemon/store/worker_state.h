// The states of a worker as farmd sees it, with their one name table. The store keeps the
// name (a TEXT column); placement, the sweeper, metrics and the API read the enum.
#ifndef FARM_DAEMON_STORE_WORKER_STATE_H_
#define FARM_DAEMON_STORE_WORKER_STATE_H_

#include <optional>
#include <string_view>

namespace farm::store {

enum class WorkerState {
  kIdle,         // heartbeating, no job running
  kBusy,         // heartbeating with at least one job running
  kDraining,     // finishing its jobs and taking no new ones (asked by itself or an admin)
  kQuarantined,  // kept out of placement by an admin until released
  kLost,         // missed heartbeats past the lease; its jobs were requeued
};

// Every state, in the order metrics list them.
inline constexpr WorkerState kWorkerStates[] = {WorkerState::kIdle, WorkerState::kBusy,
                                                WorkerState::kDraining, WorkerState::kQuarantined,
                                                WorkerState::kLost};

// "idle", "busy", "draining", "quarantined", "lost": the names the store, the API and
// the dashboard use.
std::string_view WorkerStateName(WorkerState state);

// The state named `name`; nullopt for any other text.
std::optional<WorkerState> ParseWorkerState(std::string_view name);

// True for the states placement passes over: draining, quarantined and lost.
bool IsAway(WorkerState state);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_WORKER_STATE_H_
