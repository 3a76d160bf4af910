// CUDA arch manifests of ELF shared objects: which SASS (sm_XX[a|f]) and PTX
// (compute_XX[a|f]) images each module's fatbinary carries, on which known compute
// capabilities each module and the whole wheel can load (farm::arch::CanLoad), and which
// requested TORCH_CUDA_ARCH_LIST targets are missing. Plain structs and stateless
// functions; safe from any thread.
#ifndef FARM_COMMON_WHEEL_MANIFEST_H_
#define FARM_COMMON_WHEEL_MANIFEST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/arch.h"
#include "common/status.h"
#include "common/wheel/elf/fatbin.h"
#include "common/wheel/wheel_bytes.h"

namespace farm::wheel {

// One code image found in a module's fatbinary.
struct CodeImage {
  arch::Image image;         // kind, cc, suffix
  std::string name;          // "sm_90a" or "compute_90"
  std::string section;       // ".nv_fatbin" or "__nv_relfatbin"
  int container = 0;         // fatbin container index within the section
  int index = 0;             // entry index within the container
  uint64_t flags = 0;        // fatbin entry flags
  uint32_t header_size = 0;  // fatbin entry header size
  Compression compression = Compression::kNone;
  uint64_t payload_bytes = 0;  // after decompression
  uint64_t fatbin_bytes = 0;   // entry header and payload as the fatbinary stores them
  // What the image adds to the wheel file: its stored bytes deflated alone (zlib level 1;
  // already-compressed payloads as they are), capped by AttributeWheelBytes so that the
  // images of a module never claim more than its zip entry; 0 when not measured.
  uint64_t wheel_bytes = 0;
  std::string ptx_version;  // ".version" of a PTX image ("9.0"), else ""
  std::string producer;     // tool named in the cubin's .note.nv.tkinfo ("ptxas", "nvlink")
  // The CUDA release of that tool ("13.0" from "Cuda compilation tools, release 13.0,
  // V13.0.88"): the toolkit the image was compiled with; "" when the cubin does not say.
  std::string toolkit;
  // Where the a/f suffix (or its absence) was read: "tkinfo" (cubin's tool arguments),
  // "fatbin-flags" (entry flags 0x100000 / 0x200000), "e_flags" (cubin ELF ABI v7
  // EF_CUDA_ACCELERATORS) or "ptx-target" (the PTX .target line).
  std::string suffix_source;
};

// The images of one ELF file of the wheel.
struct ModuleManifest {
  std::string module;                  // path inside the wheel: "pkg/_C.so"
  std::vector<CodeImage> images;       // in section order
  std::vector<std::string> archs;      // distinct image names, sorted: {"compute_90", "sm_80"}
  std::vector<arch::Version> runs_on;  // known ccs that can load at least one image
  int ignored_entries = 0;             // fatbin entries of kinds other than PTX and ELF

  bool has_device_code() const { return !images.empty(); }
};

// A requested image a module lacks.
struct MissingImage {
  std::string module;  // "" when the wheel has no device code at all
  std::string image;   // "sm_121a"
  // An image of the same compute capability and kind the module holds instead ("sm_90a"
  // for a missing "sm_90"), or "".
  std::string instead;
  // "attn_example/_attn_example.so lacks sm_121a", or for module "" "no module has
  // CUDA device code; sm_121a requested". With `instead`, it also says where that image
  // runs and how a recipe asks for what the package builds.
  std::string ToString() const;
};

// An image a module carries that the requested targets did not ask for: the package
// compiled for archs of its own choosing (a hard-coded -gencode, or an arch list it parsed
// its own way).
struct UnrequestedImage {
  std::string module;
  std::string image;  // "sm_75"
};

// The manifest of a whole wheel (or any set of modules).
struct ArchManifest {
  std::vector<ModuleManifest> modules;  // every ELF examined, with or without device code
  // Known ccs that every module with device code can load; empty without device code.
  std::vector<arch::Version> runs_on;
  // Requested images that are absent, per module, in module and target order.
  std::vector<MissingImage> missing;
  // Images present that no requested target names, per module, in module and image order;
  // empty when nothing was requested (no request, nothing to ignore).
  std::vector<UnrequestedImage> unrequested;
  // Where the wheel's bytes go (AttributeWheelBytes); `known` false when not measured.
  WheelBytesBreakdown bytes;
};

// Reads the manifest of the ELF shared object in `elf_bytes`, named `module` in messages.
// Modules without .nv_fatbin / __nv_relfatbin get an empty image list. With
// `measure_wheel_bytes` each image's wheel_bytes is measured (deflating it: about as long
// as a zip writer takes). On success returns the images; fails with an error naming the
// module for a malformed ELF, a malformed or truncated fatbinary, a cubin or PTX payload
// that cannot be read, or a cubin whose SM disagrees with its fatbin entry header.
Result<ModuleManifest> ReadModuleManifest(std::string_view elf_bytes, const std::string& module,
                                          const FatbinLimits& limits = {},
                                          bool measure_wheel_bytes = false);

// Fills `manifest->runs_on` from its modules, `manifest->missing` from `requested`
// (every image of every target, farm::arch::ImagesOf, must be present in every module
// with device code; a manifest without device code misses everything requested) and
// `manifest->unrequested` (images of modules with device code that no target names, when
// `requested` is not empty).
void FinishManifest(const std::vector<arch::Target>& requested, ArchManifest* manifest);

// A multi-line summary for people: per module its images with compression, runs-on and
// missing targets, then the wheel's runs-on.
std::string FormatManifest(const ArchManifest& manifest);

// The images of `module` listed the way `cuobjdump --list-elf --list-ptx` lists them:
//   ELF file    1: _C.1.sm_90a.cubin
//   PTX file    1: _C.1.sm_90.ptx
// ELF lines first, then PTX lines, each numbered from 1 in section order. The image
// names are the only part meant to be compared (see docs/wheel-checks.md).
std::string FormatCuobjdumpStyle(const ModuleManifest& module);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_MANIFEST_H_
