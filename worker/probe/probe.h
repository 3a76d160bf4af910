// Capability probe: what this host really offers builds (GPUs, CUDA toolkits, Python
// interpreters, memory, disk). CapabilityProbe is the seam; SystemProbe reads the real
// machine. The text parsers are free functions so tests check them on captured outputs.
//
// SystemProbe is thread-safe: Probe() and AvailableMemoryBytes() only read the machine.
#ifndef FARM_WORKER_PROBE_PROBE_H_
#define FARM_WORKER_PROBE_PROBE_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "worker/config/config.h"
#include "worker/probe/probe_kernels.h"

namespace farm::agent {

class CapabilityProbe {
 public:
  virtual ~CapabilityProbe() = default;
  // Returns what the host offers now. Never fails: a part that cannot be probed is left
  // empty (no driver means zero GPUs).
  virtual farm::v1::Capabilities Probe() = 0;
  // Memory a build may use right now, in bytes (MemAvailable, capped by the cgroup).
  virtual int64_t AvailableMemoryBytes() = 0;
};

// --- parsers (pure) ----------------------------------------------------------------------

struct MemInfo {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
};
// Parses /proc/meminfo text ("MemTotal:  24684092 kB"). InvalidArgument without MemTotal.
Result<MemInfo> ParseMemInfo(const std::string& text);

// Parses a cgroup v2 memory.max / v1 memory.limit_in_bytes value. Returns nullopt for
// "max" or absurdly large v1 "unlimited" values.
std::optional<int64_t> ParseCgroupMemoryLimit(const std::string& text);

// Returns the cgroup v2 path of this process from /proc/self/cgroup text ("0::/a/b").
std::string ParseCgroupV2Path(const std::string& text);

// Parses `nvcc --version` output; returns "13.0" from "release 13.0, V13.0.88".
Result<std::string> ParseNvccVersion(const std::string& text);

// Parses `nvcc --list-gpu-code` / `--list-gpu-arch` output (whitespace-separated codes)
// into the codes that look like sm_NN / compute_NN (with optional a/f suffix).
std::vector<std::string> ParseGpuCodeList(const std::string& text);

// Arch-specific and family variants nvcc may accept beyond the plain codes it lists:
// sm_XYa/compute_XYa for cc >= 9.0 and sm_XYf/compute_XYf for cc >= 10.0. Each must still
// be confirmed by the compiler.
std::vector<std::string> CandidateVariantCodes(const std::vector<std::string>& plain_codes);

// Parses the key=value lines printed by the Python probe script into `py` (version,
// torch fields). InvalidArgument without a version line.
Status ParsePythonProbe(const std::string& text, farm::v1::PythonInterpreter* py);

// True when the kernel release names WSL2 ("microsoft", "WSL2", any case).
bool KernelReleaseIsWsl2(const std::string& release);

// Where WSL2 mounts the Windows NVIDIA driver's Linux libraries (libcuda.so.1 among them).
inline constexpr char kWslDriverDir[] = "/usr/lib/wsl/lib";

// The CUDA driver libraries to try, in order. On WSL2 the Windows driver's copy in
// kWslDriverDir comes first: it is the only libcuda that reaches the GPU there, and the
// loader does not always know the directory (no ld.so.conf entry, a sandbox, a service
// started before it was mounted). Elsewhere the loader's libcuda.so.1.
std::vector<std::string> CudaDriverCandidates(bool wsl2);

// True when a CUDA_VISIBLE_DEVICES value (nullptr: unset) shows the process no GPU: empty,
// or a first entry that is not a device ("-1", "none", "NoDevFiles"). cuInit then fails
// with CUDA_ERROR_NO_DEVICE by the user's choice, and the worker is a CPU-only one.
bool CudaVisibleDevicesHidesEveryGpu(const char* value);

// What the probe found of the WSL2 driver layout when no libcuda could be used.
struct Wsl2DriverFacts {
  bool driver_dir_exists = false;  // kWslDriverDir
  bool libcuda_exists = false;     // kWslDriverDir/libcuda.so.1
  bool dxg_exists = false;         // /dev/dxg, the GPU paravirtualization device
  std::string load_error;          // dlerror() of the WSL2 libcuda, or cuInit's error
};

// Why a WSL2 host reports no GPU, and how to fix it (on Windows: the NVIDIA driver,
// `wsl --update`, `wsl --shutdown`; never a Linux driver inside WSL2).
std::string Wsl2DriverError(const Wsl2DriverFacts& facts);

// True when a GPU shares the host's memory instead of having its own: the driver says it
// is integrated (CU_DEVICE_ATTRIBUTE_INTEGRATED), or it reaches pageable host memory
// through the host's page tables and reports about as much memory as the host has (GB10;
// a GH200's HBM is a fraction of its host memory, so it stays discrete).
bool IsUnifiedMemoryGpu(bool integrated, bool uses_host_page_tables, int64_t gpu_bytes,
                        int64_t host_ram_bytes);

// "linux_x86_64" for "x86_64", "linux_aarch64" for "aarch64"/"arm64".
std::string PlatformTag(const std::string& machine);

// The Python program run by each interpreter to report its version and torch.
const char* PythonProbeScript();

// --- the real machine ---------------------------------------------------------------------

// Enumerates GPUs through the CUDA driver API loaded with dlopen (CudaDriverCandidates;
// caps->wsl2 and ram_bytes must be set). Without a driver (or with cuInit failing) adds
// zero GPUs and leaves versions empty; on WSL2, or where an NVIDIA kernel module is
// loaded, it also says why in caps->gpu_driver_error. A unified-memory GPU reports the
// host's RAM as its memory.
void ProbeGpus(farm::v1::Capabilities* caps);

// Interpreters to probe: `configured` when given, else /usr/bin/python3* then python3*
// found on PATH, deduplicated by real path, /usr/bin first.
std::vector<std::string> DiscoverPythons(const std::vector<std::string>& configured);

// `farm-worker --probe`: probes this host (probe kernels included unless turned off) and
// prints the capabilities as JSON on stdout. Returns the exit code: 0, or 1 when the probe
// kernels failed and the worker would be quarantined, or the host's GPU driver cannot be
// used (gpu_driver_error).
int PrintProbe(const WorkerConfig& config);

class SystemProbe final : public CapabilityProbe {
 public:
  SystemProbe(const WorkerConfig& config, ProcessRunner& runner)
      : config_(config), runner_(runner) {}
  farm::v1::Capabilities Probe() override;
  int64_t AvailableMemoryBytes() override;

 private:
  void ProbeHost(farm::v1::Capabilities* caps);
  void ProbeToolkits(farm::v1::Capabilities* caps);
  void ProbePythons(farm::v1::Capabilities* caps);
  std::optional<farm::v1::CudaToolkit> ProbeToolkit(const std::string& dir);
  // The candidates `sms` that `nvcc` accepts, in their order.
  std::vector<std::string> ConfirmVariantCodes(const std::string& nvcc,
                                               const std::vector<std::string>& sms);
  std::optional<int64_t> CgroupLimit();
  const ProbeKernelVerdict& KernelVerdict(const farm::v1::Capabilities& caps);
  Result<std::string> RunText(const std::vector<std::string>& argv, int64_t timeout_ms);

  const WorkerConfig config_;
  ProcessRunner& runner_;
  std::mutex kernel_mu_;
  std::optional<ProbeKernelVerdict> kernel_verdict_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_PROBE_PROBE_H_
