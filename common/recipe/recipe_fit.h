// The recipe fields that make wheels fit where they go (docs/recipes.md, "Wheel size"):
// `size_budget` (the largest wheel the recipe accepts, checked as a wheel check) and
// `fatbin_compression` (nvcc's --compress-mode for the device code, given to nvcc through
// NVCC_APPEND_FLAGS so the package need not cooperate; common/wheel/fatbin_compression.h,
// which the worker uses too). Pure functions; thread-safe.
#ifndef FARM_COMMON_RECIPE_RECIPE_FIT_H_
#define FARM_COMMON_RECIPE_RECIPE_FIT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::recipe {

// "100 MiB", "2GiB", "1.5 GB", "500KB", "12345" (bytes): binary units KiB, MiB, GiB, TiB and
// decimal ones KB, MB, GB, TB (case-insensitive, B optional after the prefix). On success
// the number of bytes, at least 1; InvalidArgument naming the text otherwise.
Result<int64_t> ParseByteSize(std::string_view text);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_RECIPE_FIT_H_
