// Matrix expansion: turns the axes a build asks for into the cells (jobs) to build, and
// says for every dropped cell why. Rules (docs/recipes.md, "Matrix"):
//   - an axis the request leaves empty takes the recipe's values; a requested value the
//     recipe does not list (when it lists that axis) is dropped with a reason;
//   - cells are the Cartesian product in axis order python, torch, cuda, arch_lists,
//     platform (an empty axis contributes one empty value), in listed order;
//   - exclude rules of the recipe and of the request remove matching cells;
//   - include rules (the request's when it has any, else the recipe's) then either fill
//     empty axes of the cells they match or add new cells (GitHub Actions semantics,
//     adapted: a new cell takes every value of the axes the rule does not name);
//   - each cell is checked against common/arch.h: torch/CUDA pairs, arch list vs CUDA;
//   - duplicates are removed, keeping the first; more than kMaxMatrixCells is an error.
// Pure functions; thread-safe.
#ifndef FARM_COMMON_RECIPE_MATRIX_H_
#define FARM_COMMON_RECIPE_MATRIX_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

inline constexpr size_t kMaxMatrixCells = 1000;

// "python", "torch", "cuda", "arch_lists", "platform": axis names in recipes, in the
// order cells are expanded.
const std::vector<std::string_view>& AxisNames();

// Maps a rule key to its axis name ("arch_list" is accepted for "arch_lists"); returns ""
// for an unknown key.
std::string_view CanonicalAxis(std::string_view key);

// OK when `value` is well formed for `axis`: python and cuda "MAJOR.MINOR", torch
// "MAJOR.MINOR[.PATCH]", arch_lists a TORCH_CUDA_ARCH_LIST in torch's spelling (the
// build gets it verbatim: "9.0;12.0a", never nvcc's "sm_90", no entry twice), platform a
// wheel platform tag (lower-case letters, digits, '_'). Otherwise InvalidArgument with the
// reason alone.
Status CheckAxisValue(std::string_view axis, std::string_view value);

// Axis values in release order: runs of digits compare as numbers ("2.8" before "2.10",
// "3.9" before "3.11"), the rest as text; a shorter value that is a prefix comes first.
bool VersionLess(std::string_view a, std::string_view b);

// For a recipe whose torch axis follows the index (matrix.torch_follow), the releases it was
// resolved to, for people: "torch \">=2.8\" resolved to 2.8.0, 2.9.1, 2.10.0 (release
// candidate)"; "" for a recipe with a torch axis of its own (or none).
std::string DescribeTorchFollow(const farm::v1::Recipe& recipe);

// "python=3.11 cuda=12.8 arch_list=12.1a": the non-empty values of a cell.
std::string DescribeCell(const farm::v1::MatrixCell& cell);

struct MatrixExpansion {
  // Cells to build, in deterministic order, without duplicates.
  std::vector<farm::v1::MatrixCell> cells;
  // One line per dropped cell or requested value: "<cell>: <reason>".
  std::vector<std::string> rejected;
  // Not OK when the matrix as a whole is unusable (too many cells, a malformed rule);
  // then `cells` is empty and `rejected` holds the same message.
  Status status;
};

// Called on each cell before it is checked (the check step above): it may change the cell's
// arch list (a recipe's `cells:` entry, cell_settings.h) and returns what changed it, for a
// dropped cell's reason ("" when nothing did). A cell made equal to an earlier one is kept
// once.
using CellAdjuster = std::function<std::string(farm::v1::MatrixCell*)>;

// Expands `requested` within what `supported` (the recipe's matrix) allows; see above.
MatrixExpansion ExpandMatrix(const farm::v1::MatrixAxes& requested,
                             const farm::v1::MatrixAxes& supported,
                             const CellAdjuster& adjust = nullptr);

// Why `cell` cannot be built under `supported` (its torch/CUDA pair, its arch list against
// its CUDA: step 5 above), "" when it can.
std::string CheckCell(const farm::v1::MatrixCell& cell, const farm::v1::MatrixAxes& supported);

// Whether a request names any axis value or include rule (else it builds the recipe's own
// matrix).
bool HasAxes(const farm::v1::MatrixAxes& m);

// What a build request expands to: ExpandMatrix(requested, recipe), or the recipe's own
// matrix when the request names no axis. farmd and farmctl (before it uploads a source)
// both call this, so they agree.
MatrixExpansion ExpandRequest(const farm::v1::MatrixAxes& requested,
                              const farm::v1::MatrixAxes& recipe,
                              const CellAdjuster& adjust = nullptr);

// InvalidArgument "the matrix has no buildable cell:" followed by every rejected line when
// `expansion` has no cell; OK otherwise.
Status CheckBuildable(const MatrixExpansion& expansion);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_MATRIX_H_
