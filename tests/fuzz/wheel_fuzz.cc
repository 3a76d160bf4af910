// Fuzzes the wheel inspector: the zip reader (libarchive's seekable reader with the
// hostile-archive defences), the dist-info checks (RECORD, WHEEL, METADATA) and the arch
// manifest of every ELF inside. Each input is written to a file under a wheel name, as the
// worker and farmd see a built wheel. Properties: nothing crashes or leaks; a report that
// passes every check lists a dist-info directory, a metadata name and version, and only
// entry names the name rules accept.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/arch.h"
#include "common/wheel/inspect.h"
#include "common/wheel/zip_stream.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

int FuzzOne(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::ScratchDir() + "/fuzz_pkg-1.0-cp311-cp311-linux_x86_64.whl";
  FILE* f = std::fopen(path.c_str(), "wb");
  fuzz::Require(f != nullptr, "scratch file opens", path);
  fuzz::Require(std::fwrite(data, 1, size, f) == size && std::fclose(f) == 0,
                "scratch file written", path);
  wheel::InspectOptions options;
  options.limits.max_total_bytes = 64 << 20;
  options.limits.max_entry_bytes = 16 << 20;
  options.limits.ratio_grace_bytes = 1 << 20;
  options.max_metadata_bytes = 1 << 20;
  options.max_elf_bytes = 16 << 20;
  options.fatbin_limits.max_entry_bytes = 4 << 20;
  options.expected_python_tag = "cp311";
  options.expected_platform = "linux_x86_64";
  options.requested_targets = *arch::ParseArchList("9.0a");
  auto report = wheel::InspectWheel(path, options);
  if (!report.ok() || !report->ok()) return 0;
  fuzz::Require(!report->dist_info.empty() && !report->metadata_name.empty() &&
                    !report->metadata_version.empty(),
                "an accepted wheel has its dist-info, name and version");
  for (const auto& file : report->files) {
    std::string rule;
    fuzz::Require(archives::CheckEntryName(file.name, &rule).empty(),
                  "an accepted wheel holds only acceptable names", file.name);
  }
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
