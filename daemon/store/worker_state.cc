#include "daemon/store/worker_state.h"

namespace farm::store {

std::string_view WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kIdle:
      return "idle";
    case WorkerState::kBusy:
      return "busy";
    case WorkerState::kDraining:
      return "draining";
    case WorkerState::kQuarantined:
      return "quarantined";
    case WorkerState::kLost:
      return "lost";
  }
  return "lost";
}

std::optional<WorkerState> ParseWorkerState(std::string_view name) {
  for (WorkerState s : kWorkerStates) {
    if (WorkerStateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsAway(WorkerState state) {
  return state == WorkerState::kDraining || state == WorkerState::kQuarantined ||
         state == WorkerState::kLost;
}

}  // namespace farm::store
