// The torch requirement a job writes into its wheel (common/wheel/metadata/requires_dist.h), so the
// wheel installs only next to a torch it runs with: a C++/CUDA extension built against
// torch X.Y fails with `undefined symbol` next to another minor. Pure; thread-safe.
#ifndef FARM_WORKER_JOB_TORCH_PIN_H_
#define FARM_WORKER_JOB_TORCH_PIN_H_

#include <string>

#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "farm/v1/worker.pb.h"

namespace farm::agent {

// The requirement for the wheels of `job` built on a worker with `caps`:
//   - a stable-ABI recipe (torch_abi.stable F): "torch>=F";
//   - a cell that names a torch: the minor of the torch the build's interpreter really has,
//     as the worker probed it (PythonInterpreter.torch_version of the interpreter
//     SelectPython picks for the cell: "2.11.0+cu130" gives "torch==2.11.*"), or the exact
//     release with torch_abi.pin: exact (a nightly is always pinned exactly);
//   - "" when the cell names no torch: the package does not build against torch, and a
//     requirement would force torch on its users.
// A job that built in a provisioned environment passes the torch installed there as
// `provisioned_torch` ("2.8.0+cu128"), which then stands for the probed one.
// NotFound when no interpreter serves the cell (the build could not have run);
// InvalidArgument when the probed torch version has no MAJOR.MINOR.
Result<std::string> TorchRequirementForJob(const farm::v1::JobAssignment& job,
                                           const farm::v1::Capabilities& caps,
                                           const std::string& provisioned_torch = "");

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_TORCH_PIN_H_
