// Parser entry point that also reports where paths were written, so LoadRecipeFile can
// point at a missing patch or source. Internal to farm_recipe; thread-safe.
#ifndef FARM_COMMON_RECIPE_RECIPE_INTERNAL_H_
#define FARM_COMMON_RECIPE_RECIPE_INTERNAL_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/recipe/yaml_reader.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

struct ParsedRecipe {
  farm::v1::Recipe recipe;
  Position source_pos;              // value of source.local / source.tarball / source.git
  std::vector<Position> patch_pos;  // one per recipe.patches()
};

// As ParseRecipe, with positions.
Result<ParsedRecipe> ParseRecipeWithPositions(std::string_view yaml, std::string_view filename);

// Section parsers shared by recipe.cc and recipe_sections.cc; each reads one optional
// top-level block of `top` into `recipe`.
Status ParseMatrixSection(const Section& top, farm::v1::MatrixAxes* matrix);
Status ParseValidationSection(const Section& top, farm::v1::Recipe* recipe);
Status ParseRetrySection(const Section& top, farm::v1::Recipe* recipe);
Status ParsePublishSection(const Section& top, farm::v1::Recipe* recipe);
// `requires:` (recipe_requires.cc).
inline constexpr size_t kMaxRequirements = 16;
Status ParseRequiresSection(const Section& top, farm::v1::Recipe* recipe);
// `torch_abi:` and `environment:` (recipe_torch.cc); read after the matrix, the scalars and
// publish, which they are checked against.
Status ParseTorchAbiSection(const Section& top, farm::v1::Recipe* recipe);
Status ParseEnvironmentSection(const Section& top, farm::v1::Recipe* recipe);
// `cells:` (recipe_cells.cc), read last: its settings are checked against the whole recipe.
Status ParseCellsSection(const Section& top, farm::v1::Recipe* recipe);

// An `env:` mapping (the recipe's, or a `cells:` entry's) into `out`: names match
// [A-Za-z_][A-Za-z0-9_]*, and none the worker always sets or TORCH_CUDA_ARCH_LIST.
Status ParseEnvMap(const ErrorSink& sink, const Field& f,
                   google::protobuf::Map<std::string, std::string>* out);
// Build requirements (PEP 508, no URL, not torch, no project twice in `seen`), each
// `items[i]` named "<where>[i]" in messages, appended to `out`.
Status ParseBuildRequirementItems(const ErrorSink& sink, const std::vector<Item>& items,
                                  const std::string& where, std::set<std::string>* seen,
                                  google::protobuf::RepeatedPtrField<std::string>* out);

// `size_budget:` and `fatbin_compression:`, and `matrix.families` (recipe_fit.cc), read
// after the matrix's axes, which the families are checked against.
Status ParseFitFields(const Section& top, farm::v1::Recipe* recipe);
Status ParseFamiliesField(const Section& matrix, farm::v1::MatrixAxes* out);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_RECIPE_INTERNAL_H_
