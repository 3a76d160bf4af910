// The environment of one cell of a recipe that asks for provisioned environments
// (recipe `environment:`, docs/recipes.md): the cell's Python and CUDA, the torch release
// the recipe maps the cell's torch to with the CUDA variant of the cell's toolkit, and the
// pinned build requirements. This is what the worker's provisioner (worker/env) makes; the
// job path carries it to the worker. Pure functions; thread-safe.
#ifndef FARM_COMMON_RECIPE_CELL_ENVIRONMENT_H_
#define FARM_COMMON_RECIPE_CELL_ENVIRONMENT_H_

#include <string>
#include <string_view>

#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

// The index variant of torch built for CUDA `cuda`: "cu128" for "12.8"; "cpu" without CUDA.
std::string TorchVariant(const std::string& cuda);

// The name of the pre-release index of torch variant `variant`: "test-cu130" (PyTorch's
// /whl/test/cu130/, given to farmd as --upstream-index test-cu130=URL).
std::string PrereleaseIndex(const std::string& variant);
// Whether index `name` is a pre-release index ("test-cu130"); its release variant is
// what follows the prefix.
inline constexpr std::string_view kPrereleaseIndexPrefix = "test-";
inline bool IsPrereleaseIndex(std::string_view name) {
  return name.starts_with(kPrereleaseIndexPrefix);
}

// Adds to environment.torch_candidates each torch minor whose environment.torch release
// is a PEP 440 pre-release ("2.12.0rc1"), and every minor of environment.torch_from_test;
// farmd calls it at submit, so every reader of the stored recipe (labels, views,
// coverage) sees one list. Nothing for a recipe without environment:.
void MarkTorchCandidates(farm::v1::Recipe* recipe);

// The provisioning spec of `cell`. FailedPrecondition when the recipe asks for no
// provisioned environment; InvalidArgument when the cell has no Python, or a torch the
// recipe's environment.torch does not map (the parser refuses such recipes, but a submit
// request may narrow the matrix to any cell). A torch of environment.torch_from_test
// comes from the variant's pre-release index (torch_index).
Result<farm::v1::ProvisionSpec> CellEnvironment(const farm::v1::Recipe& recipe,
                                                const farm::v1::MatrixCell& cell);

// The environment a wheel is validated in, in `cell`: its Python and torch (validation
// compiles nothing: no toolkit, no build requirements, and not the recipe's own lock, which
// is its build cells').
Result<farm::v1::ProvisionSpec> ValidationEnvironment(const farm::v1::Recipe& recipe,
                                                      const farm::v1::MatrixCell& cell);

// The key of a cell a stable-ABI wheel is validated in (JobNeeds.validate_locks).
std::string ValidateCellKey(const farm::v1::MatrixCell& cell);

// "Python 3.13 + torch 2.11 (newest on cu128) + CUDA 12.8 + 4 build requirements".
std::string DescribeProvisionSpec(const farm::v1::ProvisionSpec& spec);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_CELL_ENVIRONMENT_H_
