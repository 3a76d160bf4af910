// Build plans: which builds a matrix needs and in which cells each wheel is validated,
// by the recipe's torch_abi (docs/recipes.md, "Torch ABI").
//
//   - A build per torch (no torch_abi.stable): every cell of ExpandMatrix is one build,
//     validated in that cell, its wheel requiring the torch it was built against
//     (torch==X.Y.*, or torch==X.Y.Z with pin: exact).
//   - A stable-ABI build (torch_abi.stable: F): the cells are grouped by CUDA major, arch
//     list, platform and (unless torch_abi.abi3) Python; each group is one build, whose
//     wheel requires torch>=F and is validated in every cell of the group: each torch of
//     the matrix from F up, with a torch of the same CUDA major (an extension built with
//     CUDA 12.x links CUDA 12's runtime). The build runs in the group's cell with the
//     oldest Python, then the oldest CUDA (a wheel built with 12.8 runs with every 12.x
//     runtime from 12.8 on, not the reverse), then the newest torch (its stable headers
//     know the floor; TORCH_TARGET_VERSION hides what is newer).
//   - With torch_abi.abi3: V as well, the wheel is tagged cpVV-abi3 and serves every
//     Python of its group.
// Pure functions; thread-safe.
#ifndef FARM_COMMON_RECIPE_BUILD_PLAN_H_
#define FARM_COMMON_RECIPE_BUILD_PLAN_H_

#include <string>
#include <vector>

#include "common/recipe/matrix.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

struct PlannedBuild {
  farm::v1::MatrixCell build;                  // the cell the build runs in
  std::vector<farm::v1::MatrixCell> validate;  // where its wheel is validated, in matrix order
  // What the wheel's METADATA is to require ("torch>=2.9", "torch==2.8.*"); "" when the
  // cell has no torch. For builds per torch the worker writes the requirement of the torch
  // the build really ran against (the same minor: the cell names it).
  std::string torch_requirement;
  std::string python_tag;  // "cp310" for an abi3 build; "" when the build's own Python decides
  std::string abi_tag;     // "abi3" or ""
};

struct BuildPlan {
  std::vector<PlannedBuild> builds;
  // ExpandMatrix's rejected lines (the expansion's reasons for dropped cells).
  std::vector<std::string> rejected;
  // Not OK when the matrix as a whole is unusable (ExpandMatrix's status); then `builds`
  // is empty.
  Status status;
};

// Plans the builds of `requested` (as ExpandMatrix) for `recipe`.
BuildPlan PlanBuilds(const farm::v1::MatrixAxes& requested, const farm::v1::Recipe& recipe);

// Plans the builds of an expansion made already (ExpandRequest, as farmd's submit does).
BuildPlan PlanExpansion(MatrixExpansion expansion, const farm::v1::Recipe& recipe);

// "validated with torch 2.9, 2.10, 2.11 (CUDA 13.0)": the torch versions (and their CUDA)
// a planned build's wheel is validated with, for logs and job pages.
std::string DescribeValidation(const PlannedBuild& build);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_BUILD_PLAN_H_
