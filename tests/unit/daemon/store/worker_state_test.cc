#include "daemon/store/worker_state.h"

#include <set>
#include <string>

#include "tests/support/test_util.h"

namespace farm::store {
namespace {

TEST(WorkerStateTest, EveryStateHasOneNameThatReadsBack) {
  std::set<std::string> names;
  for (WorkerState s : kWorkerStates) {
    std::string name(WorkerStateName(s));
    EXPECT_TRUE(names.insert(name).second) << "two states named " << name;
    EXPECT_EQ(ParseWorkerState(name), s) << name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"idle", "busy", "draining", "quarantined", "lost"}));
}

TEST(WorkerStateTest, UnknownTextIsNoState) {
  EXPECT_EQ(ParseWorkerState(""), std::nullopt);
  EXPECT_EQ(ParseWorkerState("Idle"), std::nullopt);
  EXPECT_EQ(ParseWorkerState("rebooting"), std::nullopt);
}

TEST(WorkerStateTest, PlacementPassesOverDrainingQuarantinedAndLostOnly) {
  EXPECT_FALSE(IsAway(WorkerState::kIdle));
  EXPECT_FALSE(IsAway(WorkerState::kBusy));
  EXPECT_TRUE(IsAway(WorkerState::kDraining));
  EXPECT_TRUE(IsAway(WorkerState::kQuarantined));
  EXPECT_TRUE(IsAway(WorkerState::kLost));
}

}  // namespace
}  // namespace farm::store
