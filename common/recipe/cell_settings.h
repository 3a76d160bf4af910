// Per-cell settings (recipe `cells:`, docs/recipes.md "Per-cell settings"): which entries
// of a recipe's cell_settings a matrix cell matches, and the recipe as that cell's job
// runs it. farmd applies them when it expands a build (arch lists) and when it leases a
// job (everything else); farmctl expands the same way before it uploads. Pure functions;
// thread-safe.
#ifndef FARM_COMMON_RECIPE_CELL_SETTINGS_H_
#define FARM_COMMON_RECIPE_CELL_SETTINGS_H_

#include <string>
#include <vector>

#include "common/recipe/matrix.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

// Whether `cell` meets every condition of `when`. A version range on an axis the cell
// leaves empty (a cell without torch) does not hold, nor one on a value that is not a
// version. A cell's torch is its minor as the matrix lists it ("2.10" reads as 2.10.0).
bool CellMatches(const farm::v1::CellCondition& when, const farm::v1::MatrixCell& cell);

// "torch >=2.14, cuda >=13.0", for people.
std::string DescribeCondition(const farm::v1::CellCondition& when);

// One line per setting of `entry`: "cells[0] at line 31 (torch >=2.14): env
// CXXFLAGS=-std=c++20, timeout 7200 s".
std::string DescribeCellSettings(const farm::v1::CellSettings& entry);

// DescribeCellSettings of each entry `cell` matches, in recipe order (what
// ApplyCellSettings applies, without copying the recipe).
std::vector<std::string> MatchingCellSettings(const farm::v1::Recipe& recipe,
                                              const farm::v1::MatrixCell& cell);

struct CellRecipe {
  // The recipe with every matching entry applied and cell_settings cleared, so that
  // applying again changes nothing.
  farm::v1::Recipe recipe;
  // DescribeCellSettings of each matching entry, in recipe order.
  std::vector<std::string> applied;
};

// The recipe as a job in `cell` runs it: each matching entry's env over the recipe's,
// its build requirements added to environment.build_requirements, its timeout and
// unrequested_archs in place of the recipe's; where two entries set one thing the later
// wins. The arch list is the cell's own (ExpandRecipe applied the changes).
CellRecipe ApplyCellSettings(const farm::v1::Recipe& recipe, const farm::v1::MatrixCell& cell);

// The build requirements the entries matching `cell` add (its lock resolves them too).
std::vector<std::string> CellBuildRequirements(const farm::v1::Recipe& recipe,
                                               const farm::v1::MatrixCell& cell);

// What a build request of `recipe` expands to: ExpandRequest, with each cell's arch list
// replaced by that of the last matching entry setting one before the cell is checked. A
// changed cell that fails the check is dropped with the reason and the entry named; one
// made equal to an earlier cell is kept once.
MatrixExpansion ExpandRecipe(const farm::v1::MatrixAxes& requested, const farm::v1::Recipe& recipe);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_CELL_SETTINGS_H_
