#include "daemon/sched/waiting.h"

#include <gtest/gtest.h>

#include <limits>

namespace farm::sched {
namespace {

FleetWorker Worker(const std::string& name, const std::string& cuda = "13.0",
                   store::WorkerState state = store::WorkerState::kIdle) {
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

farm::v1::MatrixCell WaitingCell(const std::string& cuda, const std::string& arch = "9.0",
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
  Waiting w = Explain(WaitingCell("12.8"), {Worker("gpu-1"), Worker("gpu-2")});
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary, "no worker has CUDA 12.8: provision one or drop the cell");
  ASSERT_EQ(w.blocked.size(), 2u);
  EXPECT_EQ(w.blocked[0].worker_name, "gpu-1");
  EXPECT_EQ(w.blocked[0].worker_id, "w-gpu-1");
  EXPECT_EQ(w.blocked[0].reason, "no CUDA toolkit 12.8 for 9.0 (has 13.0)");
  EXPECT_TRUE(w.able.empty());
}

TEST(WaitingTest, AToolkitOfTheRightVersionThatCannotEmitTheArchNamesTheArchs) {
  Waiting w = Explain(WaitingCell("13.0", "12.1a"), {Worker("gpu-1")});
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary,
            "no worker has a CUDA 13.0 toolkit that emits 12.1a: install a newer "
            "toolkit on a worker or drop those archs");
}

TEST(WaitingTest, PlatformPythonAndMixedLacks) {
  farm::v1::MatrixCell arm = WaitingCell("13.0");
  arm.set_platform("linux_aarch64");
  EXPECT_EQ(Explain(arm, {Worker("gpu-1")}).summary,
            "no worker runs linux_aarch64: add one or drop the cell");
  EXPECT_EQ(Explain(WaitingCell("13.0", "9.0", "3.13"), {Worker("gpu-1")}).summary,
            "no worker has Python 3.13: install it on a worker or drop the cell");
  Waiting mixed = Explain(arm, {Worker("gpu-1"), Worker("gpu-2", "12.8")});
  EXPECT_TRUE(mixed.unplaceable);
  EXPECT_EQ(mixed.summary, "no worker runs linux_aarch64: add one or drop the cell");
  FleetWorker py312 = Worker("gpu-1");  // has Python 3.12 but CUDA 13.0 only
  py312.caps.mutable_pythons(0)->set_version("3.12");
  Waiting two = Explain(WaitingCell("12.8", "9.0", "3.12"), {py312, Worker("gpu-2", "12.8")});
  EXPECT_TRUE(two.unplaceable);
  EXPECT_EQ(two.summary,
            "no worker can build it: provision one with everything the cell "
            "needs or drop the cell");
}

TEST(WaitingTest, QuarantinedWorkersAndAnEmptyFleet) {
  FleetWorker sick = Worker("gpu-1", "13.0", store::WorkerState::kQuarantined);
  sick.caps.set_probe_error("probe kernel gave wrong results");
  Waiting w = Explain(WaitingCell("13.0"), {sick});
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.blocked[0].reason, "quarantined: probe kernel gave wrong results");
  EXPECT_NE(w.summary.find("quarantined"), std::string::npos) << w.summary;
  Waiting none = Explain(WaitingCell("13.0"), {});
  EXPECT_TRUE(none.unplaceable);
  EXPECT_EQ(none.summary, "no worker is registered: start farm-worker on a host that can build it");
}

TEST(WaitingTest, ABusyOrAwayWorkerThatCouldBuildItIsNotUnplaceable) {
  Waiting busy = Explain(WaitingCell("13.0"), {Worker("gpu-1", "13.0", store::WorkerState::kBusy),
                                               Worker("old", "12.8")});
  EXPECT_FALSE(busy.unplaceable);
  EXPECT_EQ(busy.summary, "waiting for a free worker: gpu-1 can build it");
  ASSERT_EQ(busy.blocked.size(), 1u);
  EXPECT_EQ(busy.blocked[0].worker_name, "old");

  FleetWorker drained = Worker("gpu-2");
  drained.drain_requested = true;
  Waiting away =
      Explain(WaitingCell("13.0"), {Worker("gpu-1", "13.0", store::WorkerState::kLost), drained});
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
  Waiting w = Explain(WaitingCell("13.0"), {Worker("gpu-1")}, merged);
  EXPECT_FALSE(w.unplaceable);
  EXPECT_EQ(w.summary, "waiting for job 7, an identical build in flight");
  // The job it waits for can never run: neither can this one, and it says why.
  Waiting stuck = Explain(WaitingCell("12.8"), {Worker("gpu-1")}, merged);
  EXPECT_TRUE(stuck.unplaceable);
  EXPECT_EQ(stuck.summary,
            "waiting for job 7, an identical build in flight, which cannot run either: no "
            "worker has CUDA 12.8: provision one or drop the cell");
  ASSERT_EQ(stuck.blocked.size(), 1u);
  PendingFacts backoff{61'000, "", 1000};
  Waiting b = Explain(WaitingCell("13.0"), {Worker("gpu-1")}, backoff);
  EXPECT_EQ(b.summary,
            "retrying after a backoff, not before 1970-01-01T00:01:01.000Z; waiting "
            "for a free worker: gpu-1 can build it");
}

FleetWorker WithGpu(FleetWorker w, const std::string& name, int major, int minor) {
  auto* gpu = w.caps.add_gpus();
  gpu->set_name(name);
  gpu->set_cc_major(major);
  gpu->set_cc_minor(minor);
  return w;
}

PendingFacts ValidationOf(std::vector<std::string> ccs, std::vector<std::string> exclude = {}) {
  PendingFacts facts;
  facts.validation = true;
  for (const auto& cc : ccs) facts.needs.add_gpu_ccs(cc);
  for (const auto& id : exclude) facts.needs.add_exclude_workers(id);
  return facts;
}

TEST(WaitingTest, AValidationJobSaysWhichGpuItWaitsFor) {
  // Neither worker has a GPU of cc 12.0; both could build the cell.
  std::vector<FleetWorker> fleet = {Worker("builder"),
                                    WithGpu(Worker("h100"), "NVIDIA H100", 9, 0)};
  Waiting w = Explain(WaitingCell("13.0", "9.0;12.0a"), fleet, ValidationOf({"12.0"}));
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary,
            "no worker with a GPU of cc 12.0 can validate it: add one (its wheels wait for "
            "hardware until then)");
  ASSERT_EQ(w.blocked.size(), 2u);
  EXPECT_EQ(w.blocked[0].reason,
            "no GPU the wheels run on: they need cc 12.0, this worker has no GPU");

  Waiting many = Explain(WaitingCell("13.0"), fleet, ValidationOf({"12.0", "12.1"}));
  EXPECT_NE(many.summary.find("a GPU of cc 12.0 or 12.1 can validate it"), std::string::npos)
      << many.summary;
  // Wheels without device code: any GPU serves.
  Waiting any = Explain(WaitingCell("13.0"), {Worker("builder")}, ValidationOf({}));
  EXPECT_EQ(any.summary,
            "no worker with a GPU can validate it: add one (its wheels wait for hardware until "
            "then)");
  Waiting none = Explain(WaitingCell("13.0"), {}, ValidationOf({"12.0"}));
  EXPECT_EQ(none.summary,
            "no worker is registered: start farm-worker on a host with a GPU of cc 12.0");
}

TEST(WaitingTest, AValidationJobWaitsForABusyOrAwayGpuWorker) {
  FleetWorker rtx =
      WithGpu(Worker("rtx", "13.0", store::WorkerState::kBusy), "NVIDIA RTX 5090", 12, 0);
  Waiting busy = Explain(WaitingCell("13.0"), {Worker("builder"), rtx}, ValidationOf({"12.0"}));
  EXPECT_FALSE(busy.unplaceable);
  EXPECT_EQ(busy.summary, "waiting for a free worker: rtx can validate it");
  rtx.state = store::WorkerState::kLost;
  Waiting lost = Explain(WaitingCell("13.0"), {Worker("builder"), rtx}, ValidationOf({"12.0"}));
  EXPECT_FALSE(lost.unplaceable);
  EXPECT_EQ(lost.summary,
            "only rtx (lost) can validate it: bring it back or undrain it, or add a worker "
            "that can");
  // A worker without the toolkit can still validate: validation compiles nothing.
  FleetWorker old = WithGpu(Worker("old", "12.8"), "NVIDIA RTX 5090", 12, 0);
  EXPECT_EQ(Explain(WaitingCell("13.0"), {old}, ValidationOf({"12.0"})).summary,
            "waiting for a free worker: old can validate it");
}

TEST(WaitingTest, AnAutomaticRetryWaitsForAnotherGpuThanTheOneThatFailed) {
  FleetWorker rtx = WithGpu(Worker("rtx"), "NVIDIA RTX 5090", 12, 0);
  Waiting w =
      Explain(WaitingCell("13.0"), {Worker("builder"), rtx}, ValidationOf({"12.0"}, {rtx.id}));
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary,
            "every worker with a GPU of cc 12.0 validated these wheels before: an automatic "
            "retry waits for another one");
}

TEST(WaitingTest, AValidationJobWithoutTheCellsPythonSaysSo) {
  FleetWorker rtx = WithGpu(Worker("rtx"), "NVIDIA RTX 5090", 12, 0);
  EXPECT_EQ(Explain(WaitingCell("13.0", "12.0a", "3.13"), {rtx}, ValidationOf({"12.0"})).summary,
            "no worker has Python 3.13: install it on a worker or drop the cell");
  FleetWorker sick =
      WithGpu(Worker("sick", "13.0", store::WorkerState::kQuarantined), "NVIDIA RTX 5090", 12, 0);
  sick.caps.set_probe_error("probe kernel gave wrong results");
  EXPECT_EQ(Explain(WaitingCell("13.0"), {sick}, ValidationOf({"12.0"})).summary,
            "every worker that could validate it is quarantined (its GPU probe failed): fix "
            "the GPU or driver and restart farm-worker");
  // Mixed lacks name what the job needs: the GPU lacks Python 3.13, the other has no GPU.
  FleetWorker py313 = Worker("builder");
  py313.caps.mutable_pythons(0)->set_version("3.13");
  EXPECT_EQ(
      Explain(WaitingCell("13.0", "12.0a", "3.13"), {rtx, py313}, ValidationOf({"12.0"})).summary,
      "no worker can validate it: it needs a GPU of cc 12.0 on a worker with the cell's "
      "platform and Python");
}

TEST(WaitingTest, ABuildOnItsTargetGpuSaysWhichGpuNoWorkerHas) {
  PendingFacts facts;
  facts.needs.set_target_gpu(true);
  std::vector<FleetWorker> fleet = {Worker("builder"),
                                    WithGpu(Worker("h100"), "NVIDIA H100", 9, 0)};
  for (auto& w : fleet) w.caps.mutable_toolkits(0)->add_gpu_codes("sm_120a");
  Waiting w = Explain(WaitingCell("13.0", "12.0a"), fleet, facts);
  EXPECT_TRUE(w.unplaceable);
  EXPECT_EQ(w.summary,
            "no worker with a GPU of cc 12.0 can build it (the recipe builds on its target "
            "GPU): add one or drop the cell");
  // A lost worker with the GPU is what it waits for; one without it is not.
  FleetWorker lost =
      WithGpu(Worker("rtx", "13.0", store::WorkerState::kLost), "NVIDIA RTX 5090", 12, 0);
  lost.caps.mutable_toolkits(0)->add_gpu_codes("sm_120a");
  fleet.push_back(lost);
  EXPECT_EQ(Explain(WaitingCell("13.0", "12.0a"), fleet, facts).summary,
            "only rtx (lost) can build it: bring it back or undrain it, or add a worker that "
            "can");
}

TEST(WaitingTest, AvailablePeersLeaveOutAwayAndSickWorkers) {
  FleetWorker drained = Worker("d");
  drained.drain_requested = true;
  auto peers = AvailablePeers({Worker("a"), Worker("b", "13.0", store::WorkerState::kLost), drained,
                               Worker("q", "13.0", store::WorkerState::kQuarantined),
                               Worker("e", "13.0", store::WorkerState::kDraining)});
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].name, "a");
}

}  // namespace
}  // namespace farm::sched

namespace farm::sched {
namespace {

TEST(WaitingTest, ALimitOnAbleNamesKeepsTheSummaryAndTheCount) {
  for (int n : {1, 6, 7, 1000}) {
    std::vector<FleetWorker> fleet;
    for (int i = 0; i < n; ++i) fleet.push_back(Worker("gpu-" + std::to_string(i)));
    Waiting all = Explain(WaitingCell("13.0"), fleet);
    PendingFacts limited_facts;
    limited_facts.max_able_names = 6;
    Waiting limited = Explain(WaitingCell("13.0"), fleet, limited_facts);
    EXPECT_EQ(all.able.size(), static_cast<size_t>(n));
    EXPECT_EQ(limited.able.size(), std::min<size_t>(n, 6));
    EXPECT_EQ(limited.able_count, static_cast<size_t>(n));
    EXPECT_EQ(limited.summary, all.summary) << n << " workers";
    EXPECT_FALSE(limited.unplaceable);
  }
  std::vector<FleetWorker> seven;
  for (int i = 0; i < 7; ++i) seven.push_back(Worker("gpu-" + std::to_string(i)));
  PendingFacts facts;
  facts.max_able_names = 6;
  EXPECT_EQ(Explain(WaitingCell("13.0"), seven, facts).summary,
            "waiting for a free worker: gpu-0, gpu-1, gpu-2, gpu-3, gpu-4 and 2 more can build "
            "it");
}

std::vector<WorkerBlock> Blocks(int n, const std::string& reason, int first = 0) {
  std::vector<WorkerBlock> out;
  for (int i = first; i < first + n; ++i) {
    out.push_back({"w-" + std::to_string(i), "gpu-" + std::to_string(i), reason});
  }
  return out;
}

TEST(ReasonEntriesTest, AFewWorkersAreListedOneByOne) {
  EXPECT_TRUE(ReasonEntries({}, 20).empty());
  auto blocked = Blocks(2, "no CUDA toolkit 12.8 (has 13.0)");
  auto entries = ReasonEntries(blocked, 2);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first, "gpu-0 (w-0)");
  EXPECT_EQ(entries[1].first, "gpu-1 (w-1)");
  EXPECT_EQ(entries[1].second, "no CUDA toolkit 12.8 (has 13.0)");
}

TEST(ReasonEntriesTest, AThousandWorkersWithOneReasonAreOneEntry) {
  auto blocked = Blocks(1000, "platform linux_aarch64 is built by aarch64 workers");
  auto entries = ReasonEntries(blocked, 20);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].first, "gpu-0 (w-0) and 999 other workers");
  EXPECT_EQ(entries[0].second, "platform linux_aarch64 is built by aarch64 workers");
}

TEST(ReasonEntriesTest, ReasonsComeMostSharedFirstAndALoneWorkerIsNamedAlone) {
  auto blocked = Blocks(1, "quarantined");
  for (auto& b : Blocks(30, "no Python 3.13", 1)) blocked.push_back(b);
  for (auto& b : Blocks(2, "no GPU", 31)) blocked.push_back(b);
  auto entries = ReasonEntries(blocked, 20);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].first, "gpu-1 (w-1) and 29 other workers");
  EXPECT_EQ(entries[1].first, "gpu-31 (w-31) and 1 other worker");
  EXPECT_EQ(entries[1].second, "no GPU");
  EXPECT_EQ(entries[2].first, "gpu-0 (w-0)");
  EXPECT_EQ(entries[2].second, "quarantined");
}

TEST(ReasonEntriesTest, PastTheLimitOfReasonsTheRestAreCounted) {
  std::vector<WorkerBlock> blocked;
  for (int r = 0; r < 50; ++r) {  // 50 reasons, 2 workers each, unicode in the text
    for (auto& b : Blocks(2, "nicht genug Speicher \u00fcbrig #" + std::to_string(r), 2 * r)) {
      blocked.push_back(b);
    }
  }
  auto entries = ReasonEntries(blocked, 20);
  ASSERT_EQ(entries.size(), 20u);
  size_t listed = 0;
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    EXPECT_NE(entries[i].first.find(" and 1 other worker"), std::string::npos);
    listed += 2;
  }
  EXPECT_EQ(entries.back().first, "(" + std::to_string(100 - listed) + " other workers)");
  EXPECT_EQ(entries.back().second,
            "31 other reasons; the dashboard's job page lists every "
            "worker's");
  EXPECT_EQ(ReasonEntries(blocked, 0).size(), 1u);  // only the count
}

}  // namespace
}  // namespace farm::sched
