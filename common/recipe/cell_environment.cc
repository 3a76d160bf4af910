#include "common/recipe/cell_environment.h"

#include <algorithm>
#include <set>

#include "common/recipe/cell_settings.h"
#include "common/recipe/matrix.h"
#include "common/upstream/release_version.h"

namespace farm::recipe {

std::string TorchVariant(const std::string& cuda) {
  if (cuda.empty()) return "cpu";
  std::string out = "cu";
  for (char c : cuda) {
    if (c != '.') out += c;
  }
  return out;
}

std::string PrereleaseIndex(const std::string& variant) {
  return std::string(kPrereleaseIndexPrefix) + variant;
}

void MarkTorchCandidates(farm::v1::Recipe* recipe) {
  // Only a provisioned recipe's torch comes from an index (and a mutable environment
  // would make any recipe one).
  if (!recipe->has_environment()) return;
  farm::v1::EnvironmentSpec* env = recipe->mutable_environment();
  std::set<std::string> minors(env->torch_candidates().begin(), env->torch_candidates().end());
  minors.insert(env->torch_from_test().begin(), env->torch_from_test().end());
  for (const auto& [minor, release] : env->torch()) {
    auto v = upstream::ParseReleaseVersion(release);
    if (v && v->IsPrerelease()) minors.insert(minor);
  }
  env->clear_torch_candidates();
  for (const std::string& m : minors) env->add_torch_candidates(m);
}

Result<farm::v1::ProvisionSpec> CellEnvironment(const farm::v1::Recipe& recipe,
                                                const farm::v1::MatrixCell& cell) {
  if (!recipe.has_environment()) {
    return Status::FailedPrecondition("recipe " + recipe.name() +
                                      " asks for no provisioned environment");
  }
  if (cell.python().empty()) {
    return Status::InvalidArgument(DescribeCell(cell) + ": a provisioned cell needs a Python");
  }
  farm::v1::ProvisionSpec spec;
  spec.set_python(cell.python());
  if (!recipe.environment().no_toolkit()) spec.set_cuda(cell.cuda());
  spec.set_platform(cell.platform().empty() ? "linux_x86_64" : cell.platform());
  if (!cell.torch().empty()) {
    auto it = recipe.environment().torch().find(cell.torch());
    if (it == recipe.environment().torch().end()) {
      return Status::InvalidArgument(DescribeCell(cell) + ": environment.torch of recipe " +
                                     recipe.name() + " does not map torch " + cell.torch());
    }
    spec.set_torch_minor(cell.torch());
    spec.set_torch_variant(TorchVariant(cell.cuda()));
    const auto& from_test = recipe.environment().torch_from_test();
    if (std::find(from_test.begin(), from_test.end(), cell.torch()) != from_test.end()) {
      spec.set_torch_index(PrereleaseIndex(spec.torch_variant()));
    }
    if (it->second == "newest") {
      spec.set_torch_newest(true);
    } else {
      spec.set_torch_version(it->second);
    }
  }
  for (const std::string& r : recipe.environment().build_requirements()) spec.add_requirements(r);
  // What the recipe's `cells:` entries add for this cell is resolved into its lock too.
  for (std::string& r : CellBuildRequirements(recipe, cell)) spec.add_requirements(std::move(r));
  // The pins of each release of the cell's torch minor on its variant's index: the worker
  // adds those of the release it installs (known here only for a fixed release).
  const std::string label = "+" + spec.torch_variant();
  for (const auto& [release, pins] : recipe.environment().torch_requirements()) {
    if (!cell.torch().empty() && release.ends_with(label) &&
        release.rfind(cell.torch() + ".", 0) == 0) {
      (*spec.mutable_torch_requirements())[release] = pins;
    }
  }
  return spec;
}

Result<farm::v1::ProvisionSpec> ValidationEnvironment(const farm::v1::Recipe& recipe,
                                                      const farm::v1::MatrixCell& cell) {
  FARM_ASSIGN_OR_RETURN(farm::v1::ProvisionSpec spec, CellEnvironment(recipe, cell));
  spec.clear_cuda();
  spec.clear_requirements();
  spec.clear_torch_requirements();
  return spec;
}

std::string ValidateCellKey(const farm::v1::MatrixCell& cell) {
  return cell.python() + "/" + cell.torch() + "/" + cell.cuda() + "/" + cell.platform();
}

std::string DescribeProvisionSpec(const farm::v1::ProvisionSpec& spec) {
  std::string out = "Python " + spec.python();
  if (!spec.torch_minor().empty()) {
    out += spec.torch_newest()
               ? " + torch " + spec.torch_minor() + " (newest on " + spec.torch_variant() + ")"
               : " + torch " + spec.torch_version() + "+" + spec.torch_variant();
    if (!spec.torch_index().empty()) out += " (release candidate, from " + spec.torch_index() + ")";
  }
  if (!spec.cuda().empty()) out += " + CUDA " + spec.cuda();
  if (spec.requirements_size() > 0) {
    out += " + " + std::to_string(spec.requirements_size()) + " build requirement" +
           (spec.requirements_size() == 1 ? "" : "s");
  }
  return out;
}

}  // namespace farm::recipe
