// NVIDIA architecture rules of the farm: the one table that says which compute
// capabilities exist, which CUDA toolkit can compile each target, which GPU can load which
// code image, and which torch releases ship for which CUDA version. Recipe validation,
// matrix expansion, placement and wheel arch manifests all ask this file, so the rules live
// in one place (documented in docs/arch-rules.md).
//
// Pure functions over constant tables: no I/O, no protobuf, safe from any thread.
#ifndef FARM_COMMON_ARCH_H_
#define FARM_COMMON_ARCH_H_

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::arch {

// A compute capability ("12.1") or a CUDA / torch release ("12.8"): major.minor.
struct Version {
  int major = 0;
  int minor = 0;
  auto operator<=>(const Version&) const = default;
  // "12.1".
  std::string ToString() const;
};

// Parses "12.8" or "12.8.1" (the patch part is ignored). On success returns {12, 8};
// InvalidArgument naming the text otherwise.
Result<Version> ParseVersion(std::string_view text);

// One entry of a TORCH_CUDA_ARCH_LIST: what to compile for one compute capability.
struct Target {
  int major = 0;
  int minor = 0;
  // '\0' (plain), 'a' (arch-specific: this exact cc only) or 'f' (family-specific).
  char suffix = '\0';
  // Embed a PTX image (compute_XY) that the driver JIT-compiles on newer GPUs.
  bool ptx = false;
  // Embed a SASS image (sm_XY). False only for a bare "compute_XY" entry.
  bool sass = true;
  bool operator==(const Target&) const = default;

  Version cc() const { return {major, minor}; }
  // Canonical TORCH_CUDA_ARCH_LIST spelling: "9.0a", "8.6+PTX", "compute_90".
  std::string ToString() const;
};

// Parses a TORCH_CUDA_ARCH_LIST. Entries are separated by ';' or whitespace and may be
// written "9.0", "12.0a", "10.0f", "8.6+PTX", "sm_90a" (SASS only) or "compute_90"
// (PTX only). Every compute capability must be one nvcc knows (KnownArchs below); 'a'
// needs cc >= 9.0 and 'f' cc >= 10.0. On success returns the targets in list order with
// duplicates removed; InvalidArgument naming the bad entry otherwise.
Result<std::vector<Target>> ParseArchList(std::string_view list);

// The entries of a TORCH_CUDA_ARCH_LIST as written, in order (separated by ';' or white
// space, empty ones dropped).
std::vector<std::string_view> ArchListEntries(std::string_view list);

// Joins targets back into a TORCH_CUDA_ARCH_LIST with ';'.
std::string FormatArchList(const std::vector<Target>& targets);

// "sm_120a" for {12, 0, 'a'}.
std::string SassName(const Target& target);
// "compute_120a" for {12, 0, 'a'}.
std::string ComputeName(const Target& target);
// The name that identifies the target in messages: SassName, or ComputeName when the
// target embeds PTX only.
std::string DisplayName(const Target& target);

// nvcc flags for the target: "-gencode=arch=compute_90a,code=sm_90a" for the SASS image
// and "-gencode=arch=compute_90a,code=compute_90a" for the PTX image.
std::vector<std::string> GencodeFlags(const Target& target);

// Oldest CUDA toolkit the farm uses to compile the target (see docs/arch-rules.md).
Version MinCuda(const Target& target);

// OK when a toolkit of version `cuda` can compile the target. Otherwise InvalidArgument
// whose message is the reason alone, e.g. "sm_121a needs CUDA >= 12.9" or
// "sm_70 is not supported by CUDA 13.0 (CUDA 13.0 dropped sm_50..sm_72)".
Status CheckCuda(const Target& target, const Version& cuda);
// First failing CheckCuda over `targets`; OK when all pass.
Status CheckCuda(const std::vector<Target>& targets, const Version& cuda);

// One code image inside a binary, as a wheel's ELF files carry them.
struct Image {
  enum class Kind { kSass, kPtx };
  Kind kind = Kind::kSass;
  int major = 0;
  int minor = 0;
  char suffix = '\0';
  bool operator==(const Image&) const = default;
  // "sm_90a" or "compute_90a".
  std::string ToString() const;
};

// Parses "sm_90a" (SASS) or "compute_120f" (PTX). InvalidArgument on anything else.
Result<Image> ParseImage(std::string_view name);

// The images a target puts into a binary (SASS and/or PTX).
std::vector<Image> ImagesOf(const Target& target);

// Whether the CUDA driver loads `image` on a GPU of compute capability `device`:
// SASS 'a' only on exactly that cc; SASS 'f' and plain SASS on the same major with an
// equal or later minor; plain PTX on any cc >= its own (JIT); 'a' PTX on exactly that cc;
// 'f' PTX on the same major with an equal or later minor.
bool CanLoad(const Image& image, const Version& device);

// A compute capability the farm knows, with GPUs that have it.
struct KnownCc {
  Version cc;
  const char* gpus;  // "H100, H200, GH200"
};
// 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 11.0, 12.0, 12.1 in ascending order.
const std::vector<KnownCc>& KnownCcs();

// Example GPUs of `cc` ("" when the cc is not in KnownCcs()).
std::string GpusOf(const Version& cc);

// The known compute capabilities on which at least one image of `targets` loads, ascending.
std::vector<Version> RunsOn(const std::vector<Target>& targets);
// The same for images found in a binary.
std::vector<Version> RunsOn(const std::vector<Image>& images);

// One torch release line and the CUDA versions its wheels are published for.
struct TorchRelease {
  Version torch;
  std::vector<Version> cuda;
};
// The torch/CUDA table, ascending by torch version.
const std::vector<TorchRelease>& TorchReleases();

// OK when torch `torch` ("2.8" or "2.8.0") ships wheels for `cuda` ("12.8"), or when
// `torch` is empty (the package needs no torch). Otherwise InvalidArgument with the reason,
// e.g. "torch 2.6 is not released for CUDA 13.0 (torch 2.6 ships for CUDA 11.8, 12.4, 12.6)".
Status CheckTorchCuda(std::string_view torch, std::string_view cuda);

}  // namespace farm::arch

#endif  // FARM_COMMON_ARCH_H_
