// What sched_bench simulates: the recipe whose matrix expands to a given number of cells,
// and the capabilities a worker able to build every one of them reports.
#pragma once

#include <string>

#include "farm/v1/types.pb.h"

namespace farm::bench {

// Returns the recipe YAML whose matrix expands to exactly `cells` cells, or "" when
// `cells` is not a product p*c*a with p <= 5 Pythons, c <= 2 CUDA versions, a <= 10 arch lists.
std::string RecipeYaml(int cells);

// What a real worker with every Python and toolkit of that recipe reports; `index` names it.
farm::v1::Capabilities MakeCapabilities(int index);

}  // namespace farm::bench
