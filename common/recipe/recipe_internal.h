// Parser entry point that also reports where paths were written, so LoadRecipeFile can
// point at a missing patch or source. Internal to farm_recipe; thread-safe.
#ifndef FARM_COMMON_RECIPE_RECIPE_INTERNAL_H_
#define FARM_COMMON_RECIPE_RECIPE_INTERNAL_H_

#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/recipe/yaml_reader.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

struct ParsedRecipe {
  farm::v1::Recipe recipe;
  Position source_pos;               // value of source.local / source.tarball / source.git
  std::vector<Position> patch_pos;   // one per recipe.patches()
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
// `size_budget:` and `fatbin_compression:`, and `matrix.families` (recipe_fit.cc), read
// after the matrix's axes, which the families are checked against.
Status ParseFitFields(const Section& top, farm::v1::Recipe* recipe);
Status ParseFamiliesField(const Section& matrix, farm::v1::MatrixAxes* out);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_RECIPE_INTERNAL_H_
