#include "daemon/sched/waiting.h"

#include <gtest/gtest.h>

#include <limits>

namespace farm::sched {
namespace {

FleetWorker Worker(const std::string& name, const std::string& cuda = "13.0",
                   const std::string& state = "idle") {
  FleetWorker w;
  w.id = "w-" + name;
  w.name = name;
  w.state = state;
  w.caps.set_platform("linux_x86_64");
  w.caps.add_pythons()->set_version("3.11");
  auto* tk = w.caps.add_toolkits();
  tk->set_version(cuda);
  for (const char* code : {"sm_90", "sm_90a", "compute_90"}) tk->add_gpu_codes(code);
  return w;
}

farm::v1::MatrixCell Cell(const std::string& cuda, const std::string& arch = "9.0",
                          const std::string& python = "3.11") {
  farm::v1::MatrixCell c;
  c.set_python(python);
  c.set_cuda(cuda);
  c.set_arch_list(arch);
  c.set_platform("linux_x86_64");
  return c;
}

Waiting Explain(const farm::v1::MatrixCell& cell, const std::vector<FleetWorker>& fleet,
                PendingFacts facts = {}) {
  return ExplainWaiting(cell, facts, fleet, AvailablePeers(fleet));
}

TEST(WaitingTest, NoWorkerHasTheToolkitSaysWhatWouldUnblockIt) {
  Waiting w = Explain(Cell("12.8"), {Worker("gpu-1"), Worker("gpu-2")});
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary, "no worker has CUDA 12.8: provision one or drop the cell");
  ASSERT_EQ(w.blocked.size(), 2u);
  EXPECT_EQ(w.blocked[0].worker_name, "gpu-1");
  EXPECT_EQ(w.blocked[0].worker_id, "w-gpu-1");
  EXPECT_EQ(w.blocked[0].reason, "no CUDA toolkit 12.8 for 9.0 (has 13.0)");
  EXPECT_TRUE(w.able.empty());
}

TEST(WaitingTest, AToolkitOfTheRightVersionThatCannotEmitTheArchNamesTheArchs) {
  Waiting w = Explain(Cell("13.0", "12.1a"), {Worker("gpu-1")});
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary,
            "no worker has a CUDA 13.0 toolkit that emits 12.1a: install a newer "
            "toolkit on a worker or drop those archs");
}

TEST(WaitingTest, PlatformPythonAndMixedLacks) {
  farm::v1::MatrixCell arm = Cell("13.0");
  arm.set_platform("linux_aarch64");
  EXPECT_EQ(Explain(arm, {Worker("gpu-1")}).summary,
            "no worker runs linux_aarch64: add one or drop the cell");
  EXPECT_EQ(Explain(Cell("13.0", "9.0", "3.13"), {Worker("gpu-1")}).summary,
            "no worker has Python 3.13: install it on a worker or drop the cell");
  Waiting mixed = Explain(arm, {Worker("gpu-1"), Worker("gpu-2", "12.8")});
  EXPECT_TRUE(mixed.unplaceable);
  EXPECT_EQ(mixed.summary, "no worker runs linux_aarch64: add one or drop the cell");
  FleetWorker py312 = Worker("gpu-1");  // has Python 3.12 but CUDA 13.0 only
  py312.caps.mutable_pythons(0)->set_version("3.12");
  Waiting two = Explain(Cell("12.8", "9.0", "3.12"), {py312, Worker("gpu-2", "12.8")});
  EXPECT_TRUE(two.unplaceable);
  EXPECT_EQ(two.summary,
            "no worker can build it: provision one with everything the cell "
            "needs or drop the cell");
}

TEST(WaitingTest, QuarantinedWorkersAndAnEmptyFleet) {
  FleetWorker sick = Worker("gpu-1", "13.0", "quarantined");
  sick.caps.set_probe_error("probe kernel gave wrong results");
  Waiting w = Explain(Cell("13.0"), {sick});
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.blocked[0].reason, "quarantined: probe kernel gave wrong results");
  EXPECT_NE(w.summary.find("quarantined"), std::string::npos) << w.summary;
  Waiting none = Explain(Cell("13.0"), {});
  EXPECT_TRUE(none.unplaceable);
  EXPECT_EQ(none.summary, "no worker is registered: start farm-worker on a host that can build it");
}

TEST(WaitingTest, ABusyOrAwayWorkerThatCouldBuildItIsNotUnplaceable) {
  Waiting busy = Explain(Cell("13.0"), {Worker("gpu-1", "13.0", "busy"), Worker("old", "12.8")});
  EXPECT_FALSE(busy.unplaceable);
  EXPECT_EQ(busy.summary, "waiting for a free worker: gpu-1 can build it");
  ASSERT_EQ(busy.blocked.size(), 1u);
  EXPECT_EQ(busy.blocked[0].worker_name, "old");

  FleetWorker drained = Worker("gpu-2");
  drained.drain_requested = true;
  Waiting away = Explain(Cell("13.0"), {Worker("gpu-1", "13.0", "lost"), drained});
  EXPECT_FALSE(away.unplaceable);
  EXPECT_EQ(away.summary,
            "only gpu-1 (lost) and gpu-2 (draining) can build it: bring it back "
            "or undrain it, or add a worker that can");
  EXPECT_EQ(away.blocked[0].reason, "worker is lost");
  EXPECT_EQ(away.blocked[1].reason, "worker is draining");
}

TEST(WaitingTest, MergedAndBackedOffJobsSayWhatTheyWaitFor) {
  PendingFacts merged{std::numeric_limits<int64_t>::max(),
                      "waiting for job 7, an identical "
                      "build in flight",
                      1000};
  Waiting w = Explain(Cell("12.8"), {Worker("gpu-1")}, merged);
  EXPECT_FALSE(w.unplaceable);
  EXPECT_EQ(w.summary, "waiting for job 7, an identical build in flight");
  PendingFacts backoff{61'000, "", 1000};
  Waiting b = Explain(Cell("13.0"), {Worker("gpu-1")}, backoff);
  EXPECT_EQ(b.summary,
            "retrying after a backoff, not before 1970-01-01T00:01:01.000Z; waiting "
            "for a free worker: gpu-1 can build it");
}

TEST(WaitingTest, AvailablePeersLeaveOutAwayAndSickWorkers) {
  FleetWorker drained = Worker("d");
  drained.drain_requested = true;
  auto peers =
      AvailablePeers({Worker("a"), Worker("b", "13.0", "lost"), drained,
                      Worker("q", "13.0", "quarantined"), Worker("e", "13.0", "draining")});
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].name, "a");
}

}  // namespace
}  // namespace farm::sched
