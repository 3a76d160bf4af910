// InspectWheel: the structure check every built wheel passes before it is stored. It
// streams the wheel once through libarchive (see zip_stream.h for the defences against
// hostile archives), checks the PEP 427 file name, the *.dist-info files (RECORD hashes and
// sizes, WHEEL tags, METADATA name and version) and, for every ELF file, reads the CUDA
// arch manifest and compares it with the requested TORCH_CUDA_ARCH_LIST, and its CPU and
// glibc needs with the platform tags (host_elf.h). Nothing is extracted to disk. Stateless;
// concurrent calls are safe. docs/wheel-checks.md lists every rule.
#ifndef FARM_COMMON_WHEEL_INSPECT_H_
#define FARM_COMMON_WHEEL_INSPECT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/status.h"
#include "common/wheel/elf/fatbin.h"
#include "common/wheel/elf/host_elf.h"
#include "common/wheel/manifest.h"
#include "common/wheel/problem.h"
#include "common/wheel/wheel_name.h"
#include "common/wheel/zip_stream.h"

namespace farm::wheel {

struct InspectOptions {
  ZipLimits limits;
  // File name the wheel is checked under; "" means the last component of the path. Set it
  // when the bytes sit under another name (a content-addressed store).
  std::string filename;
  // Largest METADATA / WHEEL / RECORD read into memory.
  int64_t max_metadata_bytes = int64_t{16} << 20;
  // Python tag of the build environment ("cp312"); "" skips the check. Satisfied by the
  // same tag, by "py3"/"py3N", or by "cp3M" with M <= N when the abi tag is "abi3".
  std::string expected_python_tag;
  // Platform tag of the build environment ("linux_x86_64"); "" skips the check. Satisfied
  // by any platform tag of the same CPU architecture (PlatformArch) or by "any"; a
  // manylinux value ("manylinux_2_28_x86_64") needs a manylinux tag of that architecture
  // and no newer glibc.
  std::string expected_platform;
  // Read the arch manifest of every ELF file. Off, no ELF is buffered.
  bool build_manifest = true;
  // With the manifest, also measure where the wheel's bytes go (manifest.bytes; each image
  // deflated alone, about a zip writer's time).
  bool measure_wheel_bytes = true;
  // Largest ELF file buffered for the manifest; a larger one is a problem.
  int64_t max_elf_bytes = int64_t{3} << 30;
  FatbinLimits fatbin_limits;
  // Targets every module with device code must carry (farm::arch::ParseArchList).
  std::vector<arch::Target> requested_targets;
  // Images the requested targets do not name are a problem ("arch-unrequested", one per
  // module) instead of only being listed in the manifest.
  bool refuse_unrequested = false;
  // A wheel file larger than this is a problem ("size-budget", with where its bytes go);
  // checked by CheckJobWheel. 0: no budget.
  int64_t size_budget_bytes = 0;
};

// One regular file of the wheel.
struct WheelFileInfo {
  std::string name;
  int64_t size = 0;
  std::string sha256;  // lowercase hex
};

struct WheelReport {
  std::string filename;      // last path component of the inspected path
  bool filename_ok = false;  // `tags` is meaningful only when true
  WheelFilename tags;
  std::string dist_info;  // "flash_attn-2.8.3.dist-info", or "" when not found
  std::string metadata_name;
  std::string metadata_version;
  std::vector<std::string> wheel_tags;     // Tag: lines of WHEEL, sorted
  std::vector<std::string> requires_dist;  // Requires-Dist values of METADATA, in order
  std::vector<WheelFileInfo> files;        // in archive order
  int64_t total_bytes = 0;                 // uncompressed bytes streamed
  bool scan_aborted = false;               // a limit or corruption stopped the scan early
  ArchManifest manifest;                   // empty unless InspectOptions::build_manifest
  std::vector<HostElf> host_elves;         // CPU and glibc needs of every ELF (same condition)
  std::vector<Problem> problems;

  bool ok() const { return problems.empty(); }
};

// Inspects the wheel at `path`. On success returns the report; a wheel that breaks any
// rule still yields a report, with `problems` naming each rule and entry. Fails only when
// the file cannot be opened (NotFound) or is not a zip archive (InvalidArgument).
Result<WheelReport> InspectWheel(const std::string& path, const InspectOptions& options);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_INSPECT_H_
