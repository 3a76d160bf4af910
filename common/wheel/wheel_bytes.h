// Where a wheel's bytes go: each CUDA code image (SASS per arch, PTX) and the other parts
// of the wheel, compressed (what they take in the wheel file, which is what upload limits
// count) and uncompressed. The zip's central directory gives each file's stored size
// (zip_directory.h); inside an ELF module, each image's share is measured by deflating its
// fatbinary bytes alone, and the module's remainder is its host code and data.
// docs/wheel-checks.md, "Where the bytes go". Pure functions; thread-safe.
#ifndef FARM_COMMON_WHEEL_WHEEL_BYTES_H_
#define FARM_COMMON_WHEEL_WHEEL_BYTES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/wheel/problem.h"
#include "common/wheel/zip_directory.h"
#include "farm/v1/types.pb.h"

namespace farm::wheel {

struct ArchManifest;

// A part of the wheel that is not a code image.
struct WheelPartBytes {
  std::string name;  // a path in the wheel ("rest" for the remainder)
  int64_t compressed = 0;
  int64_t uncompressed = 0;
};

struct WheelBytesBreakdown {
  bool known = false;
  int64_t wheel_bytes = 0;              // the wheel file
  int64_t uncompressed_bytes = 0;       // every file unpacked
  std::vector<WheelPartBytes> largest;  // largest first, at most kLargestWheelParts
  WheelPartBytes rest;
};

inline constexpr size_t kLargestWheelParts = 8;

// The bytes zlib's level 1 deflate makes of `bytes` (a zip writer's level 6 makes a little
// fewer).
int64_t DeflatedSize(std::string_view bytes);

// Fills manifest->bytes from the wheel's central directory: per module, the images'
// wheel_bytes as measured (scaled down together when they would exceed the module's zip
// entry) and the module's remainder as a part; every other file as a part; the largest
// parts listed, the rest summed (with the zip's headers).
void AttributeWheelBytes(const ZipDirectory& zip, ArchManifest* manifest);

// The breakdown in the proto (ArchManifest.bytes); nothing when it is not known.
void WheelBytesToProto(const WheelBytesBreakdown& bytes, farm::v1::ArchManifest* out);

// One line of the parts list: images of one arch in one module added together.
struct SizePart {
  std::string what;  // "sm_90a in attn_example/_attn_example.so", "attn_example/x.so (other)"
  int64_t compressed = 0;
  int64_t uncompressed = 0;
};

// The parts of a stored manifest, largest (compressed) first: code images grouped by
// module, kind and arch, then the other listed parts; `rest` is left out. Empty for a
// manifest without bytes.
std::vector<SizePart> WheelSizeParts(const farm::v1::ArchManifest& manifest);

// "1.2 GiB", "48.4 MiB", "143.6 KiB", "812 B".
std::string SizeText(int64_t bytes);

// "sm_90a in pkg/_C.so 12.1 MiB, sm_120a in pkg/_C.so 11.9 MiB, pkg/_C.so (other) 1.2 MiB":
// the first `n` parts; "" when the manifest has no bytes.
std::string LargestPartsText(const farm::v1::ArchManifest& manifest, size_t n = 4);

// The table of where the bytes go, for farmctl show and the job log: one indented line per
// part (in the wheel / unpacked, and what nvcc's compression left in the fatbinary), then
// the rest and the whole wheel. "" when the manifest has no bytes.
std::string FormatWheelBytes(const farm::v1::ArchManifest& manifest, const std::string& indent);

// The "size-budget" problem of a wheel of `wheel_bytes` over `budget` bytes (0: no budget),
// naming the budget, the size and the largest parts; nullopt when it fits.
std::optional<Problem> SizeBudgetProblem(const farm::v1::ArchManifest& manifest,
                                         int64_t wheel_bytes, int64_t budget);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_WHEEL_BYTES_H_
