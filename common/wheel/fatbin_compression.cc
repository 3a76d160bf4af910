#include "common/wheel/fatbin_compression.h"

namespace farm::wheel {

bool IsFatbinCompressionMode(std::string_view mode) {
  return mode == "size" || mode == "balance" || mode == "speed" || mode == "none";
}

std::string FatbinCompressionFlag(std::string_view mode, std::string_view toolkit) {
  if (mode.empty()) return "";
  Result<arch::Version> v = arch::ParseVersion(toolkit);
  if (!v.ok() || *v < kFatbinCompressionSince) return "";
  return "--compress-mode=" + std::string(mode);
}

}  // namespace farm::wheel
