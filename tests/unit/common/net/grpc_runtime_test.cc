#include "common/net/grpc_runtime.h"

#include <absl/synchronization/mutex.h>
#include <gtest/gtest.h>

namespace farm::net {
namespace {

// With the graph off, taking two absl::Mutex in both orders is not a "potential deadlock":
// a build of Abseil that keeps the graph would abort the process on the second order.
TEST(GrpcRuntimeTest, LocksTakenInBothOrdersDoNotAbort) {
  DisableMutexOrderGraph();
  DisableMutexOrderGraph();  // safe to call again
  absl::Mutex a, b;
  for (int round = 0; round < 2; ++round) {
    absl::Mutex& first = round == 0 ? a : b;
    absl::Mutex& second = round == 0 ? b : a;
    first.Lock();
    second.Lock();
    second.Unlock();
    first.Unlock();
  }
  SUCCEED() << "no abort on the inverted order";
}

}  // namespace
}  // namespace farm::net
