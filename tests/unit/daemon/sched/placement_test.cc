#include "daemon/sched/placement.h"

#include <gtest/gtest.h>

namespace farm::sched {
namespace {

farm::v1::Capabilities Worker() {
  farm::v1::Capabilities caps;
  caps.set_platform("linux_x86_64");
  auto* py = caps.add_pythons();
  py->set_version("3.11");
  auto* py12 = caps.add_pythons();
  py12->set_version("3.12");
  py12->set_torch_version("2.8.0+cu128");
  caps.add_toolkits()->set_version("13.0");
  return caps;
}

farm::v1::MatrixCell Cell(std::string python, std::string torch, std::string cuda,
                          std::string platform = "linux_x86_64") {
  farm::v1::MatrixCell c;
  c.set_python(python);
  c.set_torch(torch);
  c.set_cuda(cuda);
  c.set_platform(platform);
  return c;
}

TEST(PlacementTest, MatchingWorkerHasNoMissingRequirement) {
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0"), Worker()), "");
  EXPECT_EQ(MissingRequirement(Cell("3.12", "2.8", ""), Worker()), "");
}

TEST(PlacementTest, NamesTheFirstMissingRequirement) {
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "linux_aarch64"), Worker()),
            "platform linux_aarch64 is built by aarch64 workers (has linux_x86_64)");
  EXPECT_EQ(MissingRequirement(Cell("3.13", "", ""), Worker()),
            "no Python 3.13 (has 3.11, 3.12+torch2.8.0+cu128)");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "2.8", ""), Worker()),
            "no Python 3.11 with torch 2.8 (has 3.11, 3.12+torch2.8.0+cu128)");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "12.8"), Worker()),
            "no CUDA toolkit 12.8 (has 13.0)");
}

TEST(PlacementTest, QuarantinedWorkerTakesNothing) {
  auto caps = Worker();
  caps.set_probe_error("probe kernel gave wrong results");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", ""), caps),
            "quarantined: probe kernel gave wrong results");
}

farm::v1::Capabilities WithGpu(farm::v1::Capabilities caps, int major, int minor) {
  auto* gpu = caps.add_gpus();
  gpu->set_name("gpu");
  gpu->set_cc_major(major);
  gpu->set_cc_minor(minor);
  return caps;
}

farm::v1::MatrixCell ArchCell(const std::string& arch_list) {
  farm::v1::MatrixCell c = Cell("3.11", "", "13.0");
  c.set_arch_list(arch_list);
  return c;
}

TEST(PlacementTest, TheToolkitMustEmitEveryTargetAndOneCompileJobMustFit) {
  auto caps = Worker();
  for (const char* code : {"sm_90", "sm_120a", "compute_120a"}) {
    caps.mutable_toolkits(0)->add_gpu_codes(code);
  }
  EXPECT_EQ(MissingRequirement(ArchCell("9.0;12.0a"), caps), "");
  EXPECT_EQ(MissingRequirement(ArchCell("9.0;12.1a"), caps),
            "no CUDA toolkit 13.0 for 9.0;12.1a (has 13.0 without sm_121a)");
  EXPECT_EQ(MissingRequirement(ArchCell("12.0a+PTX"), caps), "");
  caps.set_ram_bytes(int64_t{8} << 30);
  EXPECT_EQ(MissingRequirement(ArchCell("9.0"), caps, {.compile_gb = 6}), "");
  EXPECT_EQ(MissingRequirement(ArchCell("9.0"), caps, {.compile_gb = 8}),
            "not enough RAM for one 8.0 GB compile job (has 8.0 GiB)");
}

farm::v1::Capabilities Aarch64Worker() {
  farm::v1::Capabilities caps = Worker();
  caps.set_platform("linux_aarch64");
  caps.set_cpu_arch("aarch64");
  return caps;
}

TEST(PlacementTest, EachPlatformGoesOnlyToWorkersOfItsCpu) {
  const auto x86 = Worker();
  const auto arm = Aarch64Worker();
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "linux_aarch64"), arm), "");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "linux_x86_64"), x86), "");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "linux_x86_64"), arm),
            "platform linux_x86_64 is built by x86_64 workers (has linux_aarch64)");
  // manylinux and linux tags of one CPU are built by the same workers.
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "manylinux_2_28_aarch64"), arm), "");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "manylinux2014_x86_64"), x86), "");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "manylinux_2_28_aarch64"), x86),
            "platform manylinux_2_28_aarch64 is built by aarch64 workers (has linux_x86_64)");
  // A cell without a platform is an x86_64 cell: aarch64 workers never take it, so one
  // build key never names wheels of two CPUs.
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", ""), x86), "");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", ""), arm),
            "platform linux_x86_64 is built by x86_64 workers (has linux_aarch64)");
  farm::v1::Capabilities unknown = Worker();
  unknown.clear_platform();
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "linux_x86_64"), unknown),
            "platform linux_x86_64 is built by x86_64 workers (has none)");
}

TEST(PlacementTest, APeerOfAnotherCpuIsNoReasonToWait) {
  // A GB10 could validate sm_121a, but it cannot build an x86_64 cell: the x86_64 worker
  // without a GPU builds it, and leaves the aarch64 cell alone.
  farm::v1::Capabilities gb10 = Aarch64Worker();
  gb10.add_gpus()->set_cc_major(12);
  gb10.mutable_gpus(0)->set_cc_minor(1);
  std::vector<PeerWorker> peers = {{"gb10", gb10}};
  farm::v1::MatrixCell cell = Cell("3.11", "", "13.0", "linux_x86_64");
  cell.set_arch_list("12.1a");
  EXPECT_EQ(PlacementBlocker(cell, Worker(), peers), "");
  cell.set_platform("linux_aarch64");
  EXPECT_EQ(PlacementBlocker(cell, Worker(), peers),
            "platform linux_aarch64 is built by aarch64 workers (has linux_x86_64)");
  EXPECT_EQ(PlacementBlocker(cell, gb10, {}), "");
}

// A GB10: aarch64, 20 cores, 128 GB of which the kernel reports about 119 GiB, one GPU of
// cc 12.1 that shares it.
farm::v1::Capabilities Gb10() {
  farm::v1::Capabilities caps = Aarch64Worker();
  caps.set_cpu_cores(20);
  caps.set_ram_bytes(int64_t{119} << 30);
  farm::v1::Gpu* gpu = caps.add_gpus();
  gpu->set_cc_major(12);
  gpu->set_cc_minor(1);
  gpu->set_memory_bytes(caps.ram_bytes());
  gpu->set_unified_memory(true);
  return caps;
}

farm::v1::MatrixCell Gb10Cell(const std::string& arch_list) {
  farm::v1::MatrixCell cell = Cell("3.11", "", "13.0", "linux_aarch64");
  cell.set_arch_list(arch_list);
  return cell;
}

TEST(PlacementTest, UnifiedMemoryCountsCompileJobsAgainstGpuValidations) {
  const farm::v1::Capabilities gb10 = Gb10();
  EXPECT_TRUE(HasUnifiedMemory(gb10));
  EXPECT_FALSE(HasUnifiedMemory(WithGpu(Worker(), 9, 0)));
  // 0.85 x 119 GiB = 101.15 GiB usable: a 4 GB compile job next to a 97 GB validation fits,
  // next to a 98 GB one it does not.
  EXPECT_EQ(MissingRequirement(Gb10Cell("12.1a"), gb10, {.compile_gb = 4, .validation_gb = 97}),
            "");
  EXPECT_EQ(MissingRequirement(Gb10Cell("12.1a"), gb10, {.compile_gb = 4, .validation_gb = 98}),
            "not enough unified memory for one 4.0 GB compile job next to 98.0 GB of GPU "
            "validation (has 119.0 GiB shared by CPU and GPU)");
  // The validations of the jobs the GB10 already runs count too.
  EXPECT_EQ(MissingRequirement(Gb10Cell("12.1a"), gb10, {.compile_gb = 4, .validation_gb = 8}, 89),
            "");
  EXPECT_EQ(MissingRequirement(Gb10Cell("12.1a"), gb10, {.compile_gb = 4, .validation_gb = 8}, 90),
            "not enough unified memory for one 4.0 GB compile job next to 98.0 GB of GPU "
            "validation (has 119.0 GiB shared by CPU and GPU)");
  // A cell its GPU cannot validate runs no validation script there: only the compile job
  // and what the other jobs hold count.
  EXPECT_EQ(MissingRequirement(Gb10Cell("9.0a"), gb10, {.compile_gb = 4, .validation_gb = 200}),
            "");
  // A worker with its own GPU memory counts the compile job against its RAM alone.
  farm::v1::Capabilities h100 = WithGpu(Worker(), 9, 0);
  h100.set_ram_bytes(int64_t{16} << 30);
  EXPECT_EQ(MissingRequirement(ArchCell("9.0a"), h100, {.compile_gb = 4, .validation_gb = 80}), "");
}

TEST(PlacementTest, RunningJobsHoldTheirValidationMemoryOnlyOnUnifiedHosts) {
  std::vector<RunningJob> running = {{Gb10Cell("12.1a"), 8},
                                     {Gb10Cell("12.1a"), 16},
                                     {Gb10Cell("9.0a"), 30}};  // not validated on a GB10
  EXPECT_DOUBLE_EQ(HeldValidationGb(Gb10(), running), 24);
  EXPECT_DOUBLE_EQ(HeldValidationGb(WithGpu(Worker(), 12, 1), running), 0);
  EXPECT_DOUBLE_EQ(HeldValidationGb(Gb10(), {}), 0);
}

TEST(PlacementTest, CanValidateOnlyOnAGpuTheWheelLoadsOn) {
  EXPECT_FALSE(CanValidate(ArchCell("9.0"), Worker()));
  EXPECT_TRUE(CanValidate(ArchCell("9.0;12.0a"), WithGpu(Worker(), 9, 0)));
  EXPECT_FALSE(CanValidate(ArchCell("12.0a"), WithGpu(Worker(), 12, 1)));  // a: exact cc only
  EXPECT_TRUE(CanValidate(ArchCell("8.0"), WithGpu(Worker(), 8, 6)));      // later minor
  EXPECT_TRUE(CanValidate(ArchCell(""), WithGpu(Worker(), 12, 1)));
  auto quarantined = WithGpu(Worker(), 9, 0);
  quarantined.set_probe_error("wrong results");
  EXPECT_FALSE(CanValidate(ArchCell("9.0"), quarantined));
}

TEST(PlacementTest, AWorkerWithoutTheGpuLeavesTheCellToAPeerThatCanProveIt) {
  auto cpu_only = Worker();
  std::vector<PeerWorker> peers = {{"rtx-5090", WithGpu(Worker(), 12, 0)},
                                   {"h100", WithGpu(Worker(), 9, 0)}};
  EXPECT_EQ(PlacementBlocker(ArchCell("9.0a"), cpu_only, peers),
            "left for h100, whose GPU can validate it");
  EXPECT_EQ(PlacementBlocker(ArchCell("9.0a"), WithGpu(Worker(), 9, 0), peers), "");
  // No peer serves sm_121a: whoever can build it does, and validation waits for hardware.
  EXPECT_EQ(PlacementBlocker(ArchCell("12.1a"), cpu_only, peers), "");
  // A peer that cannot build the cell is no reason to wait.
  peers[1].caps.set_platform("linux_aarch64");
  EXPECT_EQ(PlacementBlocker(ArchCell("9.0a"), cpu_only, peers), "");
}

TEST(PlacementTest, ABuildOnItsTargetGpuWaitsForThatGpuAndSaysWhich) {
  farm::v1::JobNeeds needs;
  needs.set_target_gpu(true);
  std::vector<PeerWorker> peers;
  EXPECT_EQ(PlacementBlocker(ArchCell("12.0a"), Worker(), peers, needs),
            "the recipe builds on the GPU it targets (build_on_target_gpu): needs a GPU of cc "
            "12.0, this worker has no GPU");
  auto h100 = WithGpu(Worker(), 9, 0);
  h100.mutable_gpus(0)->set_name("NVIDIA H100 80GB HBM3");
  EXPECT_EQ(PlacementBlocker(ArchCell("12.0a"), h100, peers, needs),
            "the recipe builds on the GPU it targets (build_on_target_gpu): needs a GPU of cc "
            "12.0, this worker has NVIDIA H100 80GB HBM3 (cc 9.0)");
  EXPECT_EQ(PlacementBlocker(ArchCell("12.0a"), WithGpu(Worker(), 12, 0), peers, needs), "");
  // Without the need the H100 builds it, and the wheel waits for its hardware.
  EXPECT_EQ(PlacementBlocker(ArchCell("12.0a"), h100, peers), "");
}

TEST(PlacementTest, AValidationJobNeedsAGpuTheWheelsRunOnAndNoToolkit) {
  farm::v1::JobNeeds needs;
  needs.add_gpu_ccs("9.0");
  needs.add_gpu_ccs("12.0");
  auto no_toolkit = Worker();
  no_toolkit.clear_toolkits();
  EXPECT_EQ(ValidationBlocker(ArchCell("9.0;12.0a"), needs, WithGpu(no_toolkit, 12, 0), "w-1"), "");
  EXPECT_EQ(ValidationBlocker(ArchCell("9.0;12.0a"), needs, WithGpu(Worker(), 12, 1), "w-1"),
            "no GPU the wheels run on: they need cc 9.0, 12.0, this worker has gpu (cc 12.1)");
  EXPECT_EQ(ValidationBlocker(ArchCell("9.0"), needs, Worker(), "w-1"),
            "no GPU the wheels run on: they need cc 9.0, 12.0, this worker has no GPU");
  // Wheels without device code run on any GPU, but on a GPU all the same.
  EXPECT_EQ(ValidationBlocker(ArchCell(""), farm::v1::JobNeeds(), WithGpu(Worker(), 7, 5), "w-1"),
            "");
  EXPECT_EQ(ValidationBlocker(ArchCell(""), farm::v1::JobNeeds(), Worker(), "w-1"),
            "no GPU the wheels run on: they need any GPU, this worker has no GPU");
  // The venv needs the cell's Python; a worker that tried before is left out.
  EXPECT_EQ(ValidationBlocker(Cell("3.13", "", "13.0"), needs, WithGpu(Worker(), 9, 0), "w-1"),
            "no Python 3.13 (has 3.11, 3.12+torch2.8.0+cu128)");
  needs.add_exclude_workers("w-1");
  EXPECT_EQ(ValidationBlocker(ArchCell("9.0"), needs, WithGpu(Worker(), 9, 0), "w-1"),
            "validated these wheels before; an automatic retry goes to another GPU");
  EXPECT_EQ(ValidationBlocker(ArchCell("9.0"), needs, WithGpu(Worker(), 9, 0), "w-2"), "");
}

TEST(PlacementClassKeyTest, AlikeHostsShareAClassAndAnyPlacementDifferenceSplitsIt) {
  farm::v1::Capabilities a;
  a.set_hostname("gpu-1");
  a.set_platform("linux_x86_64");
  a.set_free_disk_bytes(100);
  a.add_pythons()->set_version("3.12");
  auto* gpu = a.add_gpus();
  gpu->set_name("NVIDIA H100 ✓"), gpu->set_cc_major(9), gpu->set_uuid("GPU-1"), gpu->set_index(0);
  (*a.mutable_labels())["rack"] = "r1";
  (*a.mutable_labels())["zone"] = "z1";
  farm::v1::Capabilities b = a;
  b.set_hostname("gpu-2");
  b.set_free_disk_bytes(999'999'999'999);
  b.mutable_gpus(0)->set_uuid("GPU-2");
  b.mutable_gpus(0)->set_index(3);
  EXPECT_EQ(PlacementClassKey(a), PlacementClassKey(b));
  farm::v1::Capabilities c = a;
  c.mutable_gpus(0)->set_cc_minor(1);
  EXPECT_NE(PlacementClassKey(a), PlacementClassKey(c));
  farm::v1::Capabilities d = a;
  d.set_probe_error("probe kernel failed");
  EXPECT_NE(PlacementClassKey(a), PlacementClassKey(d));
  EXPECT_EQ(PlacementClassKey({}), PlacementClassKey({}));
}

}  // namespace
}  // namespace farm::sched

namespace farm::sched {
namespace {

farm::v1::JobNeeds Provisioned() {
  farm::v1::JobNeeds needs;
  needs.set_provisioned(true);
  return needs;
}

TEST(PlacementTest, ProvisionedCellGoesToAWorkerThatProvisionsWithoutItsPython) {
  farm::v1::Capabilities caps = Worker();  // 3.11, 3.12 with torch 2.8, CUDA 13.0
  const farm::v1::MatrixCell cell = Cell("3.13", "2.11", "12.8");
  EXPECT_EQ(MissingRequirement(cell, caps, {}, 0, Provisioned()),
            "does not provision environments (the recipe asks for them: farm-worker --provision)");
  caps.mutable_provisioning()->set_enabled(true);
  // No Python 3.13 here, and no toolkit 12.8 either: fetching none, it cannot build it.
  EXPECT_EQ(MissingRequirement(cell, caps, {}, 0, Provisioned()),
            "no CUDA toolkit 12.8 and fetches none (has 13.0)");
  caps.mutable_provisioning()->set_fetches_toolkits(true);
  EXPECT_EQ(MissingRequirement(cell, caps, {}, 0, Provisioned()), "");
  // The rules that do not depend on what is installed still hold.
  EXPECT_EQ(
      MissingRequirement(Cell("3.13", "2.11", "12.8", "linux_aarch64"), caps, {}, 0, Provisioned()),
      "platform linux_aarch64 is built by aarch64 workers (has linux_x86_64)");
  caps.set_ram_bytes(int64_t{4} << 30);
  EXPECT_NE(MissingRequirement(cell, caps, {.compile_gb = 8}, 0, Provisioned()), "");
  caps.set_probe_error("probe kernel gave wrong results");
  EXPECT_EQ(MissingRequirement(cell, caps, {}, 0, Provisioned()),
            "quarantined: probe kernel gave wrong results");
}

TEST(PlacementTest, AWorkerCountingOnFarmdForToolkitsFetchesNoneWhereFarmdServesNone) {
  farm::v1::Capabilities caps = Worker();  // CUDA 13.0 installed
  caps.mutable_provisioning()->set_enabled(true);
  caps.mutable_provisioning()->set_fetches_toolkits(true);
  caps.mutable_provisioning()->set_toolkits_through_farm(true);
  const farm::v1::MatrixCell cell = Cell("3.11", "2.8", "12.8");
  farm::v1::Capabilities served = caps;
  SettleProvisioning(/*farm_serves_toolkits=*/true, &served);
  EXPECT_EQ(MissingRequirement(cell, served, {}, 0, Provisioned()), "");
  // farmd serves no redist tree: the CUDA 12.8 cell waits, saying why, instead of
  // failing its attempts on a 404 from farmd.
  SettleProvisioning(/*farm_serves_toolkits=*/false, &caps);
  EXPECT_FALSE(caps.provisioning().fetches_toolkits());
  EXPECT_EQ(MissingRequirement(cell, caps, {}, 0, Provisioned()),
            "no CUDA toolkit 12.8, and farmd serves no toolkit tree to fetch one from "
            "(farmd --upstream-tree redist=URL) (has 13.0)");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "2.9", "13.0"), caps, {}, 0, Provisioned()), "");
  // A recipe that compiles no CUDA (environment.toolkit: false) needs no toolkit at all.
  farm::v1::JobNeeds no_toolkit = Provisioned();
  no_toolkit.set_no_toolkit(true);
  EXPECT_EQ(MissingRequirement(cell, caps, {}, 0, no_toolkit), "");
  // A worker with a redist folder of its own keeps fetching whatever farmd serves.
  farm::v1::Capabilities own = Worker();
  own.mutable_provisioning()->set_enabled(true);
  own.mutable_provisioning()->set_fetches_toolkits(true);
  SettleProvisioning(false, &own);
  EXPECT_TRUE(own.provisioning().fetches_toolkits());
}

TEST(PlacementTest, AProvisionedValidationGoesToAProvisioningWorkerWithAGpuAndNoToolkit) {
  farm::v1::Capabilities caps = WithGpu(Worker(), 9, 0);  // 3.11, 3.12 with torch 2.8
  const farm::v1::MatrixCell cell = Cell("3.13", "2.10", "12.8");
  farm::v1::JobNeeds needs = Provisioned();
  needs.add_gpu_ccs("9.0");
  EXPECT_EQ(ValidationBlocker(cell, needs, caps, "w-1"),
            "does not provision environments (the recipe asks for them: farm-worker --provision)");
  caps.mutable_provisioning()->set_enabled(true);
  // Neither Python 3.13 nor a toolkit 12.8 here, and none fetched: validation needs neither.
  EXPECT_EQ(ValidationBlocker(cell, needs, caps, "w-1"), "");
  farm::v1::Capabilities other = caps;
  other.mutable_gpus(0)->set_cc_major(12);
  EXPECT_EQ(ValidationBlocker(cell, needs, other, "w-1").rfind("no GPU the wheels run on: ", 0),
            0u);
  caps.set_probe_error("probe kernel gave wrong results");
  EXPECT_EQ(ValidationBlocker(cell, needs, caps, "w-1"),
            "quarantined: probe kernel gave wrong results");
}

TEST(PlacementTest, ACellWithoutEnvironmentStillNeedsItsPython) {
  farm::v1::Capabilities caps = Worker();
  caps.mutable_provisioning()->set_enabled(true);
  caps.mutable_provisioning()->set_fetches_toolkits(true);
  EXPECT_EQ(MissingRequirement(Cell("3.13", "", ""), caps),
            "no Python 3.13 (has 3.11, 3.12+torch2.8.0+cu128)");
  EXPECT_EQ(PlacementBlocker(Cell("3.13", "", ""), caps, {}, Provisioned()), "");
}

TEST(PlacementTest, TheEnvironmentCacheSizeDoesNotSplitPlacementClasses) {
  farm::v1::Capabilities a = Worker();
  a.mutable_provisioning()->set_enabled(true);
  farm::v1::Capabilities b = a;
  a.mutable_provisioning()->set_cache_bytes(1);
  b.mutable_provisioning()->set_cache_bytes(int64_t{5} << 30);
  EXPECT_EQ(PlacementClassKey(a), PlacementClassKey(b));
  b.mutable_provisioning()->set_fetches_toolkits(true);
  EXPECT_NE(PlacementClassKey(a), PlacementClassKey(b));
}

}  // namespace
}  // namespace farm::sched
