#include "common/wheel/upload_limits.h"

#include "common/wheel/wheel_bytes.h"

namespace farm::wheel {

std::vector<UploadLimit> DefaultUploadLimits() {
  return {{"GitHub Releases", kGitHubMaxAssetBytes, "GitHub's documented limit: under 2 GiB"},
          {"the Hugging Face Hub", kHubMaxFileBytes, "the Hub's documented limit: 50 GB"},
          {"PyPI", kPypiMaxFileBytes, "PyPI's limit unless the project was granted more"}};
}

std::string TooLargeMessage(const UploadLimit& limit, const std::string& filename, int64_t size,
                            const farm::v1::ArchManifest& manifest) {
  if (limit.max_bytes <= 0 || size <= limit.max_bytes) return "";
  std::string out = "too large for " + limit.destination + ": " + filename + " is " +
                    SizeText(size) + " (" + std::to_string(size) +
                    " bytes), over the largest file it takes, " + SizeText(limit.max_bytes) + " (" +
                    std::to_string(limit.max_bytes) + " bytes; " + limit.source + ")";
  std::string parts = LargestPartsText(manifest);
  if (!parts.empty()) out += "; largest parts: " + parts;
  return out +
         ". Nothing was uploaded. To make it fit: fatbin_compression: size, matrix.families, "
         "or fewer arch targets (docs/publishing.md, \"Size limits\")";
}

std::string FitsText(int64_t size, const std::vector<UploadLimit>& limits) {
  std::string out;
  for (const UploadLimit& l : limits) {
    if (!out.empty()) out += "; ";
    if (l.max_bytes <= 0) {
      out += l.destination + ": fits (no limit)";
    } else if (size <= l.max_bytes) {
      out += l.destination + ": fits (at most " + SizeText(l.max_bytes) + ")";
    } else {
      out += l.destination + ": too large (at most " + SizeText(l.max_bytes) + ")";
    }
  }
  return out;
}

}  // namespace farm::wheel
