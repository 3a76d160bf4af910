// nvcc's --compress-mode for a recipe's `fatbin_compression` (docs/recipes.md, "Wheel
// size"): which modes there are, and the flag a toolkit of a given version takes. Shared
// by the recipe parser and the worker, which puts the flag into NVCC_APPEND_FLAGS (nvcc
// reads it itself, so the package need not cooperate). Pure functions; thread-safe.
#ifndef FARM_COMMON_WHEEL_FATBIN_COMPRESSION_H_
#define FARM_COMMON_WHEEL_FATBIN_COMPRESSION_H_

#include <string>
#include <string_view>

#include "common/arch.h"

namespace farm::wheel {

// The modes nvcc's --compress-mode takes besides "default": "size", "balance", "speed",
// "none".
bool IsFatbinCompressionMode(std::string_view mode);

// nvcc learnt --compress-mode in CUDA 12.8.
inline constexpr arch::Version kFatbinCompressionSince{12, 8};

// The flag the worker appends to NVCC_APPEND_FLAGS for `mode` with a toolkit of version
// `toolkit` ("13.0"): "--compress-mode=size"; "" when `mode` is empty or the toolkit is
// older than 12.8 (or its version unreadable), and the build keeps nvcc's default.
std::string FatbinCompressionFlag(std::string_view mode, std::string_view toolkit);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_FATBIN_COMPRESSION_H_
