#include "worker/job/torch_pin.h"

#include "common/wheel/metadata/requires_dist.h"
#include "worker/job/build_env.h"

namespace farm::agent {

Result<std::string> TorchRequirementForJob(const farm::v1::JobAssignment& job,
                                           const farm::v1::Capabilities& caps,
                                           const std::string& provisioned_torch) {
  const farm::v1::TorchAbi& abi = job.recipe().torch_abi();
  if (!abi.stable_floor().empty()) return wheel::TorchFloorRequirement(abi.stable_floor());
  if (job.cell().torch().empty()) return std::string();
  if (!provisioned_torch.empty())
    return wheel::TorchRequirementFor(provisioned_torch, abi.exact_pin());
  FARM_ASSIGN_OR_RETURN(farm::v1::PythonInterpreter python, SelectPython(job.cell(), caps));
  return wheel::TorchRequirementFor(python.torch_version(), abi.exact_pin());
}

}  // namespace farm::agent
