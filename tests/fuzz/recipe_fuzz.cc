// Fuzzes the recipe parser and what farmd does next with a parsed recipe: matrix expansion
// and the wheel-name check. Properties: nothing crashes, hangs or leaks; an accepted
// recipe has a name; an expansion is either usable or says why not.
#include <cstddef>
#include <cstdint>

#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/recipe/wheel_names.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

int FuzzOne(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  auto recipe = recipe::ParseRecipe(in.Rest(), "fuzz.yaml");
  if (!recipe.ok()) {
    fuzz::Require(!recipe.status().message().empty(), "a refused recipe says why");
    return 0;
  }
  fuzz::Require(!recipe->name().empty(), "an accepted recipe has a name", in.Rest());
  recipe::MatrixExpansion expansion = recipe::ExpandMatrix(recipe->matrix(), recipe->matrix());
  if (!expansion.status.ok()) {
    fuzz::Require(expansion.cells.empty(), "an unusable matrix yields no cells");
    return 0;
  }
  (void)recipe::CheckWheelNames(*recipe, expansion.cells, "fuzz.yaml", false);
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
