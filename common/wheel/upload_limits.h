// How large a file each place a wheel goes accepts, as the services document it, and the
// refusal a wheel over one gets (docs/publishing.md, "Size limits"): farmd's publisher checks
// a wheel against its destination before it uploads a byte, farmctl inspect says where a
// wheel fits. Pure functions; thread-safe.
#ifndef FARM_COMMON_WHEEL_UPLOAD_LIMITS_H_
#define FARM_COMMON_WHEEL_UPLOAD_LIMITS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "farm/v1/types.pb.h"

namespace farm::wheel {

// GitHub: "each file included in a release must be under 2 GiB" (its upload answers 422
// "size must be less than or equal to 2147483648", and users report exactly 2 GiB failing).
inline constexpr int64_t kGitHubMaxAssetBytes = (int64_t{2} << 30) - 1;
// The Hub: "Per file: 50GB max, 20GB recommended".
inline constexpr int64_t kHubMaxFileBytes = 50'000'000'000;
// PyPI: 100 MiB per file unless the project was granted more.
inline constexpr int64_t kPypiMaxFileBytes = int64_t{100} << 20;

struct UploadLimit {
  std::string destination;  // "GitHub Releases"
  int64_t max_bytes = 0;    // the largest file accepted; 0 or less: no limit
  std::string source;       // where the limit comes from: "GitHub's documented limit", a flag
};

// The default limits of GitHub Releases, the Hub and PyPI, in that order.
std::vector<UploadLimit> DefaultUploadLimits();

// The refusal of `filename`, `size` bytes, at `limit`: "too large for GitHub Releases:
// X.whl is 2.31 GiB (2480000000 bytes), over the largest file it takes, 2.00 GiB
// (2147483647 bytes; GitHub's documented limit); largest parts: sm_90a in pkg/_C.so
// 1.10 GiB, ... Nothing was uploaded. To make it fit: fatbin_compression: size,
// matrix.families, or fewer arch targets (docs/publishing.md, "Size limits")". "" when it
// fits.
std::string TooLargeMessage(const UploadLimit& limit, const std::string& filename, int64_t size,
                            const farm::v1::ArchManifest& manifest);

// "GitHub Releases: fits (at most 2.00 GiB); PyPI: too large (at most 100.0 MiB)": `size`
// against each limit.
std::string FitsText(int64_t size, const std::vector<UploadLimit>& limits);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_UPLOAD_LIMITS_H_
