#include "common/net/grpc_runtime.h"

#include <absl/synchronization/mutex.h>

namespace farm::net {

void DisableMutexOrderGraph() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace farm::net
