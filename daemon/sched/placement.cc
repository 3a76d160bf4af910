#include "daemon/sched/placement.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/arch.h"
#include "common/fs.h"
#include "common/wheel/job_check.h"
#include "common/wheel/wheel_name.h"

namespace farm::sched {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? "none" : out;
}

bool HasPython(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
               std::string* have) {
  std::vector<std::string> seen;
  for (const auto& py : caps.pythons()) {
    seen.push_back(py.version() +
                   (py.torch_version().empty() ? "" : "+torch" + py.torch_version()));
    if (!cell.python().empty() && py.version() != cell.python()) continue;
    if (cell.torch().empty() || py.torch_version().rfind(cell.torch(), 0) == 0) return true;
  }
  *have = Join(seen);
  return false;
}

// The first image of the arch list the toolkit cannot emit, or "".
std::string MissingCode(const farm::v1::CudaToolkit& tk, const std::vector<arch::Target>& targets) {
  for (const arch::Target& t : targets) {
    for (const arch::Image& image : arch::ImagesOf(t)) {
      std::string name = image.ToString();
      if (std::find(tk.gpu_codes().begin(), tk.gpu_codes().end(), name) == tk.gpu_codes().end()) {
        return name;
      }
    }
  }
  return "";
}

// A toolkit of the cell's CUDA (major.minor) when the cell names one, that can emit every
// target of the arch list (toolkits that reported no codes are taken on trust).
bool HasToolkit(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                std::string* have) {
  auto targets = arch::ParseArchList(cell.arch_list());
  std::vector<std::string> seen;
  for (const auto& tk : caps.toolkits()) {
    bool version_ok = cell.cuda().empty() || tk.version() == cell.cuda() ||
                      tk.version().rfind(cell.cuda() + ".", 0) == 0;
    std::string missing = targets.ok() && tk.gpu_codes_size() > 0 ? MissingCode(tk, *targets) : "";
    if (version_ok && missing.empty()) return true;
    seen.push_back(version_ok ? tk.version() + " without " + missing : tk.version());
  }
  if (cell.cuda().empty() && caps.toolkits_size() == 0) return true;
  *have = Join(seen);
  return false;
}

std::string GpusOf(const farm::v1::Capabilities& caps) {
  std::vector<std::string> gpus;
  for (const auto& gpu : caps.gpus()) {
    gpus.push_back(gpu.name() + " (cc " + std::to_string(gpu.cc_major()) + "." +
                   std::to_string(gpu.cc_minor()) + ")");
  }
  return gpus.empty() ? "no GPU" : Join(gpus);
}

std::string JoinVersions(const std::vector<arch::Version>& versions) {
  std::vector<std::string> out;
  for (const auto& v : versions) out.push_back(v.ToString());
  return Join(out);
}

bool HasGpuOf(const farm::v1::Capabilities& caps, const std::vector<std::string>& ccs) {
  for (const auto& gpu : caps.gpus()) {
    std::string cc = std::to_string(gpu.cc_major()) + "." + std::to_string(gpu.cc_minor());
    if (ccs.empty() || std::find(ccs.begin(), ccs.end(), cc) != ccs.end()) return true;
  }
  return false;
}

std::string Gb(double gb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", gb);
  return buf;
}

// "" when one compile job fits the worker's memory; on a unified-memory worker next to the
// GPU validations of the job itself and of the jobs the worker runs.
std::string MissingMemory(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                          const JobMemory& memory, double held_gb) {
  if (memory.compile_gb <= 0 || caps.ram_bytes() <= 0) return "";
  const double usable = kUsableMemoryFraction * static_cast<double>(caps.ram_bytes());
  const double gib = double(int64_t{1} << 30);
  if (!HasUnifiedMemory(caps)) {
    if (usable >= memory.compile_gb * gib) return "";
    return "not enough RAM for one " + Gb(memory.compile_gb) + " compile job (has " +
           fs::HumanBytes(caps.ram_bytes()) + ")";
  }
  double validation = CanValidate(cell, caps) ? memory.validation_gb : 0;
  if (usable >= (memory.compile_gb + validation + held_gb) * gib) return "";
  return "not enough unified memory for one " + Gb(memory.compile_gb) + " compile job next to " +
         Gb(validation + held_gb) + " of GPU validation (has " + fs::HumanBytes(caps.ram_bytes()) +
         " shared by CPU and GPU)";
}

// The platform and Python requirements of a cell (a build's, and a validation's venv).
// Not quarantined, and the CPU of the cell's platform.
std::string MissingPlatform(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps) {
  if (!caps.probe_error().empty()) return "quarantined: " + caps.probe_error();
  const std::string platform = wheel::CellPlatform(cell);
  if (wheel::PlatformArch(platform) != wheel::PlatformArch(caps.platform())) {
    return "platform " + platform + " is built by " + wheel::PlatformArch(platform) +
           " workers (has " + (caps.platform().empty() ? "none" : caps.platform()) + ")";
  }
  return "";
}

std::string MissingHost(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps) {
  if (std::string platform = MissingPlatform(cell, caps); !platform.empty()) return platform;
  std::string have;
  if (!HasPython(cell, caps, &have)) {
    std::string want = "Python " + (cell.python().empty() ? "any" : cell.python());
    if (!cell.torch().empty()) want += " with torch " + cell.torch();
    return "no " + want + " (has " + have + ")";
  }
  return "";
}

// A cell the worker provisions itself: its Python (host or archive) needs no interpreter
// here, its toolkit none where the worker fetches toolkits (redist archives emit every
// target of their version; host toolkits are still checked by HasToolkit).
std::string MissingProvisioned(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                               const JobMemory& memory, double held_gb, bool no_toolkit) {
  if (std::string platform = MissingPlatform(cell, caps); !platform.empty()) return platform;
  if (!caps.provisioning().enabled()) {
    return "does not provision environments (the recipe asks for them: farm-worker --provision)";
  }
  std::string have;
  if (!no_toolkit && !caps.provisioning().fetches_toolkits() && !HasToolkit(cell, caps, &have)) {
    std::string why = caps.provisioning().toolkits_through_farm()
                          ? ", and farmd serves no toolkit tree to fetch one from "
                            "(farmd --upstream-tree redist=URL)"
                          : " and fetches none";
    return "no CUDA toolkit" + (cell.cuda().empty() ? "" : " " + cell.cuda()) + why + " (has " +
           have + ")";
  }
  return MissingMemory(cell, caps, memory, held_gb);
}

}  // namespace

void SettleProvisioning(bool farm_serves_toolkits, farm::v1::Capabilities* caps) {
  farm::v1::Provisioning* p = caps->mutable_provisioning();
  if (p->toolkits_through_farm() && !farm_serves_toolkits) p->set_fetches_toolkits(false);
}

bool HasUnifiedMemory(const farm::v1::Capabilities& caps) {
  return std::any_of(caps.gpus().begin(), caps.gpus().end(),
                     [](const farm::v1::Gpu& g) { return g.unified_memory(); });
}

double HeldValidationGb(const farm::v1::Capabilities& caps, const std::vector<RunningJob>& jobs) {
  if (!HasUnifiedMemory(caps)) return 0;
  double held = 0;
  for (const RunningJob& job : jobs) {
    if (CanValidate(job.cell, caps)) held += job.validation_gb;
  }
  return held;
}

std::string MissingRequirement(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                               const JobMemory& memory, double held_gb,
                               const farm::v1::JobNeeds& needs) {
  if (needs.provisioned()) {
    return MissingProvisioned(cell, caps, memory, held_gb, needs.no_toolkit());
  }
  if (std::string host = MissingHost(cell, caps); !host.empty()) return host;
  std::string have;
  if (!HasToolkit(cell, caps, &have)) {
    return "no CUDA toolkit" + (cell.cuda().empty() ? "" : " " + cell.cuda()) +
           (cell.arch_list().empty() ? "" : " for " + cell.arch_list()) + " (has " + have + ")";
  }
  // At least one compile job must fit where MAX_JOBS puts it: 85% of the RAM.
  return MissingMemory(cell, caps, memory, held_gb);
}

bool CanValidate(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps) {
  if (caps.gpus_size() == 0 || !caps.probe_error().empty()) return false;
  auto targets = arch::ParseArchList(cell.arch_list());
  if (!targets.ok() || targets->empty()) return true;
  std::vector<arch::Version> runs_on = arch::RunsOn(*targets);
  for (const auto& gpu : caps.gpus()) {
    arch::Version cc{gpu.cc_major(), gpu.cc_minor()};
    if (std::find(runs_on.begin(), runs_on.end(), cc) != runs_on.end()) return true;
  }
  return false;
}

std::string PlacementClassKey(const farm::v1::Capabilities& caps) {
  farm::v1::Capabilities key = caps;
  key.clear_hostname();
  key.clear_free_disk_bytes();
  key.mutable_provisioning()->clear_cache_bytes();  // grows with every job
  if (!key.provisioning().enabled()) key.clear_provisioning();
  for (auto& gpu : *key.mutable_gpus()) {
    gpu.clear_uuid();
    gpu.clear_index();
  }
  // Deterministic: a map field (labels) would otherwise serialize in any order.
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  key.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::string PlacementBlocker(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                             const std::vector<PeerWorker>& peers, const farm::v1::JobNeeds& needs,
                             const JobMemory& memory, double held_gb) {
  std::string missing = MissingRequirement(cell, caps, memory, held_gb, needs);
  if (!missing.empty() || CanValidate(cell, caps)) return missing;
  if (needs.target_gpu()) {
    auto targets = arch::ParseArchList(cell.arch_list());
    std::string ccs =
        targets.ok() && !targets->empty() ? JoinVersions(arch::RunsOn(*targets)) : "any";
    return "the recipe builds on the GPU it targets (build_on_target_gpu): needs a GPU of cc " +
           ccs + ", this worker has " + GpusOf(caps);
  }
  for (const PeerWorker& peer : peers) {
    if (CanValidate(cell, peer.caps) &&
        MissingRequirement(cell, peer.caps, memory, 0, needs).empty()) {
      return "left for " + peer.name + ", whose GPU can validate it";
    }
  }
  return "";
}

std::string ValidationBlocker(const farm::v1::MatrixCell& cell, const farm::v1::JobNeeds& needs,
                              const farm::v1::Capabilities& caps, const std::string& worker_id) {
  if (needs.provisioned()) {
    // The worker makes the cell's Python and torch itself; validation needs no toolkit.
    if (std::string platform = MissingPlatform(cell, caps); !platform.empty()) return platform;
    if (!caps.provisioning().enabled()) {
      return "does not provision environments (the recipe asks for them: farm-worker --provision)";
    }
  } else if (std::string host = MissingHost(cell, caps); !host.empty()) {
    return host;
  }
  const auto& excluded = needs.exclude_workers();
  if (std::find(excluded.begin(), excluded.end(), worker_id) != excluded.end()) {
    return "validated these wheels before; an automatic retry goes to another GPU";
  }
  std::vector<std::string> ccs(needs.gpu_ccs().begin(), needs.gpu_ccs().end());
  if (HasGpuOf(caps, ccs)) return "";
  return "no GPU the wheels run on: they need " +
         (ccs.empty() ? std::string("any GPU") : "cc " + Join(ccs)) + ", this worker has " +
         GpusOf(caps);
}

}  // namespace farm::sched
