// Probe kernels (kernels/probe/probe.cu, compiled into farm-worker): at start the worker
// compiles the probe for each of its GPUs' own arch with a toolkit that can emit it, runs
// it on that GPU, and checks the numbers. A failure quarantines the worker: farmd gives it
// no jobs and shows why (Capabilities.probe_error). Runs on the caller's thread; the
// processes go through the ProcessRunner.
#ifndef FARM_WORKER_PROBE_PROBE_KERNELS_H_
#define FARM_WORKER_PROBE_PROBE_KERNELS_H_

#include <optional>
#include <string>

#include "common/process.h"
#include "farm/v1/types.pb.h"

namespace farm::agent {

// The source of kernels/probe/probe.cu as built into this binary.
const std::string& ProbeKernelSource();

// The toolkit of `caps` that emits `code` ("sm_90"), preferring the newest; nullopt when
// none does.
std::optional<farm::v1::CudaToolkit> ToolkitFor(const farm::v1::Capabilities& caps,
                                                const std::string& code);

struct ProbeKernelVerdict {
  bool ran = false;     // false: nothing to prove (no GPU, or no toolkit at all)
  std::string error;    // empty when every GPU passed; else why the worker is quarantined
  std::string summary;  // one line for the worker log
};

// Compiles and runs the probe for every GPU of `caps` under `work_dir` (created; left for
// inspection). Never fails: trouble is the verdict's error.
ProbeKernelVerdict RunProbeKernels(ProcessRunner& runner, const farm::v1::Capabilities& caps,
                                   const std::string& work_dir);

}  // namespace farm::agent

#endif  // FARM_WORKER_PROBE_PROBE_KERNELS_H_
