#include "daemon/sched/fleet_cache.h"

#include <gtest/gtest.h>

#include <functional>

namespace farm::sched {
namespace {

store::WorkerRow StoredWorker(const std::string& id, const std::string& python) {
  farm::v1::Capabilities caps;
  caps.set_hostname("host-" + id);
  caps.set_platform("linux_x86_64");
  caps.set_cpu_arch("x86_64");
  caps.add_pythons()->set_version(python);
  caps.add_toolkits()->set_version("13.0");
  return store::WorkerRow{id, "name-" + id, caps.SerializeAsString(), store::WorkerState::kIdle, 1,
                          2,  false};
}

TEST(FleetCacheTest, AHeartbeatOrABusyWorkerKeepsTheViewAndPlacementInputsRebuildIt) {
  FleetCache cache;
  std::vector<store::WorkerRow> rows = {StoredWorker("w-1", "3.12"), StoredWorker("w-2", "3.12"),
                                        StoredWorker("w-3", "3.11")};
  auto first = cache.Get(rows);
  ASSERT_EQ(first->fleet.size(), 3u);
  EXPECT_EQ(first->NameOf("w-2"), "name-w-2");
  EXPECT_EQ(first->NameOf("w-9"), "");
  // Alike hosts form one class; the third differs in its Python.
  EXPECT_EQ(first->fleet[0].caps_class, first->fleet[1].caps_class);
  EXPECT_NE(first->fleet[0].caps_class, first->fleet[2].caps_class);

  rows[0].state = store::WorkerState::kBusy;
  rows[1].last_heartbeat_ms = 99;
  EXPECT_EQ(cache.Get(rows), first);
  EXPECT_EQ(cache.builds(), 1);

  auto changes = std::vector<std::function<void(std::vector<store::WorkerRow>&)>>{
      [](auto& r) { r[0].state = store::WorkerState::kLost; },
      [](auto& r) { r[1].state = store::WorkerState::kDraining; },
      [](auto& r) { r[2].state = store::WorkerState::kQuarantined; },
      [](auto& r) { r[0].drain_requested = true; },
      [](auto& r) { r[1].name = "renamed"; },
      [](auto& r) { r[2] = StoredWorker("w-3", "3.13"); },
      [](auto& r) { r.push_back(StoredWorker("w-4", "3.12")); },
      [](auto& r) { r.pop_back(); },
      [](auto& r) { r.clear(); },
  };
  int64_t builds = cache.builds();
  for (size_t i = 0; i < changes.size(); ++i) {
    changes[i](rows);
    auto view = cache.Get(rows);
    EXPECT_EQ(cache.builds(), ++builds) << "change " << i;
    EXPECT_EQ(view->fleet.size(), rows.size()) << "change " << i;
    EXPECT_EQ(cache.Get(rows), view) << "change " << i;  // and kept again
  }
  EXPECT_TRUE(cache.Get({})->fleet.empty());
}

TEST(FleetCacheTest, TheViewReadsTheNewRows) {
  FleetCache cache;
  std::vector<store::WorkerRow> rows = {StoredWorker("w-1", "3.12")};
  cache.Get(rows);
  rows[0].state = store::WorkerState::kLost;
  auto view = cache.Get(rows);
  ASSERT_EQ(view->fleet.size(), 1u);
  EXPECT_EQ(view->fleet[0].state, store::WorkerState::kLost);
  EXPECT_TRUE(view->peers.empty());  // a lost worker is no peer
}

}  // namespace
}  // namespace farm::sched
