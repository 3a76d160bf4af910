// Wheel names at submit time: predicts the local version label of every cell of an
// expanded matrix (farm::wheel::WheelLabel over the images its arch list asks for) and
// refuses a build in which two cells would give different wheels one file name, pointing
// at the recipe value to change. Python and platform are in the wheel's tags, so two
// cells collide when they share both and their labels are equal. Pure; thread-safe.
#ifndef FARM_COMMON_RECIPE_WHEEL_NAMES_H_
#define FARM_COMMON_RECIPE_WHEEL_NAMES_H_

#include <string_view>
#include <vector>

#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

// OK when every cell's wheel gets its own name. Otherwise InvalidArgument
// "<file>:<line>:<column>: <why> ; <fix>": at publish.local_version when the template
// lacks the placeholder that tells the two cells apart ({arch}, {cuda_nodot},
// {torch_nodot}, or the default {variant}), or at the second of two arch lists that build
// the same images. `arch_lists_from_request`: the arch lists came from the submit request
// (farmctl --arch-list), so the message names the option instead of a recipe position.
// Also InvalidArgument, at publish.local_version, for a template that does not render.
Status CheckWheelNames(const farm::v1::Recipe& recipe,
                       const std::vector<farm::v1::MatrixCell>& cells, std::string_view filename,
                       bool arch_lists_from_request);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_WHEEL_NAMES_H_
