#include "daemon/requests/match.h"

#include <algorithm>
#include <vector>

#include "common/arch.h"
#include "common/recipe/cell_settings.h"
#include "common/recipe/matrix.h"
#include "common/wheel/wheel_name.h"

namespace farm::requests {
namespace {

using Values = google::protobuf::RepeatedPtrField<std::string>;

Status Refuse(const std::string& why) { return Status::FailedPrecondition(why); }

std::string Join(const Values& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

// "2.8" of "2.8" and "2.8.1".
std::string Minor(const std::string& version) {
  auto v = arch::ParseVersion(version);
  return v.ok() ? v->ToString() : version;
}

// Whether the farm knows torch `torch` (its table, or the recipe's torch_cuda entries).
bool KnownTorch(const farm::v1::Recipe& recipe, const std::string& torch) {
  const std::string minor = Minor(torch);
  if (recipe.matrix().torch_cuda().count(minor) > 0) return true;
  return std::any_of(arch::TorchReleases().begin(), arch::TorchReleases().end(),
                     [&](const arch::TorchRelease& r) { return r.torch.ToString() == minor; });
}

// The torch value of the recipe's axis that `spec` asks for ("" when the recipe has none).
Result<std::string> PickTorch(const farm::v1::Recipe& recipe, const Spec& spec) {
  const Values& axis = recipe.matrix().torch();
  if (axis.empty()) return std::string();
  if (spec.torch.empty()) {
    return Refuse(recipe.name() + " is built against torch (" + Join(axis) +
                  "), and the request names no torch");
  }
  if (!KnownTorch(recipe, spec.torch)) {
    return Refuse("torch " + spec.torch + " is not on the indexes the farm knows");
  }
  for (const std::string& v : axis) {
    if (v == spec.torch || (Minor(v) == v && v == Minor(spec.torch))) return v;
  }
  return Refuse("the recipe of " + recipe.name() + " builds for torch " + Join(axis) +
                ", not torch " + spec.torch);
}

// The one value of `axis` equal to `want` ("" when the recipe has no such axis).
Result<std::string> PickValue(const farm::v1::Recipe& recipe, const Values& axis,
                              const std::string& what, const std::string& want) {
  if (axis.empty()) return std::string();
  if (std::find(axis.begin(), axis.end(), want) != axis.end()) return want;
  return Refuse("the recipe of " + recipe.name() + " builds for " + what + " " + Join(axis) +
                ", not " + what + " " + (want.empty() ? "(none)" : want));
}

// Refuses when no CUDA of the recipe compiles for the GPU's compute capability.
Status CheckSomeCudaCompiles(const farm::v1::Recipe& recipe, const arch::Version& cc) {
  const Values& cudas = recipe.matrix().cuda();
  if (cudas.empty() || recipe.matrix().arch_lists().empty()) return Status::Ok();
  arch::Target target{.major = cc.major, .minor = cc.minor};
  std::string why;
  for (const std::string& c : cudas) {
    auto v = arch::ParseVersion(c);
    if (!v.ok()) continue;
    Status s = arch::CheckCuda(target, *v);
    if (s.ok()) return s;
    why = s.message();
  }
  return Refuse("the GPU (compute capability " + cc.ToString() +
                ") needs an arch that no CUDA of " + "the recipe of " + recipe.name() +
                " supports (CUDA " + Join(cudas) + "): " + why);
}

bool RunsOn(const std::string& arch_list, const arch::Version& cc) {
  if (arch_list.empty()) return true;
  auto targets = arch::ParseArchList(arch_list);
  if (!targets.ok()) return false;
  auto on = arch::RunsOn(*targets);
  return std::find(on.begin(), on.end(), cc) != on.end();
}

// The arch lists of the recipe that run on the GPU, in the recipe's order.
Result<std::vector<std::string>> ArchListsFor(const farm::v1::Recipe& recipe,
                                              const arch::Version& cc) {
  std::vector<std::string> out;
  for (const std::string& a : recipe.matrix().arch_lists()) {
    if (RunsOn(a, cc)) out.push_back(a);
  }
  if (out.empty() && !recipe.matrix().arch_lists().empty()) {
    return Refuse("no arch list of the recipe of " + recipe.name() + " (" +
                  Join(recipe.matrix().arch_lists()) + ") runs on compute capability " +
                  cc.ToString());
  }
  if (out.empty()) out.push_back("");
  return out;
}

// Expands `axes` with each arch list in turn; the first cell that runs on the GPU wins.
Result<Matched> Expand(const farm::v1::Recipe& recipe, farm::v1::MatrixAxes axes,
                       const std::vector<std::string>& arch_lists, const arch::Version& cc) {
  std::string rejected;
  for (const std::string& a : arch_lists) {
    axes.clear_arch_lists();
    if (!a.empty()) axes.add_arch_lists(a);
    recipe::MatrixExpansion expansion = recipe::ExpandRecipe(axes, recipe);
    for (const farm::v1::MatrixCell& cell : expansion.cells) {
      if (RunsOn(cell.arch_list(), cc)) return Matched{.axes = axes, .cell = cell};
    }
    for (const std::string& r : expansion.rejected) rejected += (rejected.empty() ? "" : "; ") + r;
  }
  return Refuse("the recipe of " + recipe.name() + " cannot build that cell: " +
                (rejected.empty() ? std::string("its matrix expresses no such cell") : rejected));
}

}  // namespace

Result<Matched> MatchRecipe(const farm::v1::Recipe& recipe, const Spec& spec) {
  if (!spec.version.empty() &&
      wheel::NormalizeVersion(spec.version) != wheel::NormalizeVersion(recipe.version())) {
    return Refuse("the farm's recipe of " + recipe.name() + " builds version " + recipe.version() +
                  ", not " + spec.version);
  }
  if (recipe.requirements_size() > 0) {
    return Refuse("the recipe of " + recipe.name() +
                  " needs other recipes' wheels; requests do not build such recipes yet");
  }
  FARM_ASSIGN_OR_RETURN(arch::Version cc, arch::ParseVersion(spec.compute_capability));
  farm::v1::MatrixAxes axes;
  FARM_ASSIGN_OR_RETURN(std::string torch, PickTorch(recipe, spec));
  if (!torch.empty()) axes.add_torch(torch);
  FARM_RETURN_IF_ERROR(CheckSomeCudaCompiles(recipe, cc));
  FARM_ASSIGN_OR_RETURN(std::string cuda,
                        PickValue(recipe, recipe.matrix().cuda(), "CUDA", spec.cuda));
  if (!cuda.empty()) axes.add_cuda(cuda);
  FARM_ASSIGN_OR_RETURN(std::string python,
                        PickValue(recipe, recipe.matrix().python(), "Python", spec.python));
  if (!python.empty()) axes.add_python(python);
  FARM_ASSIGN_OR_RETURN(std::string platform,
                        PickValue(recipe, recipe.matrix().platform(), "platform", spec.platform));
  if (!platform.empty()) axes.add_platform(platform);
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> arch_lists, ArchListsFor(recipe, cc));
  return Expand(recipe, std::move(axes), arch_lists, cc);
}

}  // namespace farm::requests
