// SM families: a recipe's `matrix.families` ([sm80-89, sm90, sm100-103, sm120-121]) splits
// each arch list into one cell per family it has targets in, so one list plans one wheel
// per family (common/recipe/matrix.cc; docs/recipes.md, "SM families"), and a family
// wheel's label names its family when its images serve exactly that family (identity.h).
// Here, beside the labels, because farm_recipe builds on farm_wheel. Pure; thread-safe.
#ifndef FARM_COMMON_WHEEL_SM_FAMILIES_H_
#define FARM_COMMON_WHEEL_SM_FAMILIES_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/arch.h"
#include "common/status.h"

namespace farm::wheel {

struct SmFamily {
  std::string name;  // as written: "sm80-89", "sm90"
  arch::Version lo;  // 8.0
  arch::Version hi;  // 8.9 (the same as lo for "sm90")
  bool Holds(const arch::Version& cc) const { return lo <= cc && cc <= hi; }
  // "sm80to89", "sm90": the family in a PEP 440 local label (which turns '-' into '.').
  std::string Label() const;
};

// "sm80-89" (cc 8.0 to 8.9), "sm100-103", "sm90". InvalidArgument unless "sm" and a
// compute capability nvcc knows, optionally '-' and a later one of the same major.
Result<SmFamily> ParseFamily(std::string_view text);

// Every family of a recipe, in its order. InvalidArgument for a malformed family, a
// family named twice, or two that share a compute capability.
Result<std::vector<SmFamily>> ParseFamilies(
    const google::protobuf::RepeatedPtrField<std::string>& names);

// `arch_list` split into one TORCH_CUDA_ARCH_LIST per family it has targets in, in family
// order, each keeping its targets' order and spelling ("8.6+PTX", "9.0a"). Without
// families, the list itself. InvalidArgument naming a target no family holds.
Result<std::vector<std::string>> SplitArchList(const std::string& arch_list,
                                               const std::vector<SmFamily>& families);

// The family `images` serve as a whole: every image's compute capability within it and
// every known GPU of it loading one of their SASS images. nullptr when none does.
const SmFamily* FamilyServed(const std::vector<arch::Image>& images,
                             const std::vector<SmFamily>& families);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_SM_FAMILIES_H_
