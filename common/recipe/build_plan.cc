#include "common/recipe/build_plan.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/arch.h"
#include "common/recipe/matrix.h"
#include "common/wheel/metadata/requires_dist.h"

namespace farm::recipe {
namespace {

// Versions compare numerically ("2.10" after "2.9"); an empty or malformed one first.
arch::Version V(const std::string& text) {
  Result<arch::Version> v = arch::ParseVersion(text);
  return v.ok() ? *v : arch::Version{-1, -1};
}

// A requirement the recipe parser has already checked can be formed; "" otherwise.
std::string OrEmpty(const Result<std::string>& r) { return r.ok() ? r.value() : ""; }

std::string CudaMajor(const std::string& cuda) { return cuda.substr(0, cuda.find('.')); }

// The cell a group's build runs in: oldest Python, then oldest CUDA, then newest torch.
const farm::v1::MatrixCell& BuildCell(const std::vector<farm::v1::MatrixCell>& group) {
  return *std::min_element(group.begin(), group.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(V(a.python()), V(a.cuda()), V(b.torch())) <
           std::make_tuple(V(b.python()), V(b.cuda()), V(a.torch()));
  });
}

BuildPlan PlanStable(std::vector<farm::v1::MatrixCell> cells, const farm::v1::TorchAbi& abi) {
  BuildPlan plan;
  const bool abi3 = !abi.abi3().empty();
  // Groups in the order their first cell appears in the expansion.
  std::vector<std::vector<farm::v1::MatrixCell>> groups;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> index;
  for (farm::v1::MatrixCell& c : cells) {
    auto key = std::make_tuple(CudaMajor(c.cuda()), c.arch_list(), c.platform(),
                               abi3 ? std::string() : c.python());
    auto [it, added] = index.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(std::move(c));
  }
  const std::string requirement = OrEmpty(wheel::TorchFloorRequirement(abi.stable_floor()));
  for (auto& group : groups) {
    PlannedBuild b;
    b.build = BuildCell(group);
    b.validate = std::move(group);
    b.torch_requirement = requirement;
    if (abi3) {
      arch::Version py = V(abi.abi3());
      b.python_tag = "cp" + std::to_string(py.major) + std::to_string(py.minor);
      b.abi_tag = "abi3";
    }
    plan.builds.push_back(std::move(b));
  }
  return plan;
}

}  // namespace

BuildPlan PlanBuilds(const farm::v1::MatrixAxes& requested, const farm::v1::Recipe& recipe) {
  return PlanExpansion(ExpandMatrix(requested, recipe.matrix()), recipe);
}

BuildPlan PlanExpansion(MatrixExpansion expansion, const farm::v1::Recipe& recipe) {
  BuildPlan plan;
  if (!expansion.status.ok()) {
    plan.rejected = std::move(expansion.rejected);
    plan.status = expansion.status;
    return plan;
  }
  const farm::v1::TorchAbi& abi = recipe.torch_abi();
  if (!abi.stable_floor().empty()) {
    plan = PlanStable(std::move(expansion.cells), abi);
    plan.rejected = std::move(expansion.rejected);
    return plan;
  }
  plan.rejected = std::move(expansion.rejected);
  for (farm::v1::MatrixCell& c : expansion.cells) {
    PlannedBuild b;
    if (!c.torch().empty()) {
      b.torch_requirement = OrEmpty(wheel::TorchRequirementFor(c.torch(), abi.exact_pin()));
    }
    b.validate.push_back(c);
    b.build = std::move(c);
    plan.builds.push_back(std::move(b));
  }
  return plan;
}

std::string DescribeValidation(const PlannedBuild& build) {
  std::vector<std::string> torches, cudas, pythons;
  auto add = [](std::vector<std::string>* list, const std::string& v) {
    if (!v.empty() && std::find(list->begin(), list->end(), v) == list->end()) list->push_back(v);
  };
  for (const auto& c : build.validate) {
    add(&torches, c.torch());
    add(&cudas, c.cuda());
    add(&pythons, c.python());
  }
  auto join = [](const std::vector<std::string>& list) {
    std::string out;
    for (const auto& v : list) out += (out.empty() ? "" : ", ") + v;
    return out;
  };
  std::string out = "validated with";
  if (!torches.empty()) out += " torch " + join(torches);
  if (!pythons.empty()) out += (torches.empty() ? " Python " : " on Python ") + join(pythons);
  if (!cudas.empty()) out += " (CUDA " + join(cudas) + ")";
  return out;
}

}  // namespace farm::recipe
