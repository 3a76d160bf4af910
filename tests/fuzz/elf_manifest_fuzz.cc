// Fuzzes the arch manifest reader on whole ELF files: the ELF section table, the fatbinary
// inside it and the cubins inside that (seeds: the modules nvcc builds for the wheel tests
// and a host-only shared object), and the host ELF reader (CPU, glibc version table) on the
// same bytes. Properties: nothing crashes or leaks; every image of an accepted module
// names a real SASS or PTX target; a refused module is named.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/wheel/elf/host_elf.h"
#include "common/wheel/manifest.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

int FuzzOne(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto host = wheel::ReadHostElf(bytes, "pkg/_C.so");
  if (!host.ok()) {
    fuzz::Require(host.status().message().find("pkg/_C.so") != std::string::npos,
                  "a refused host ELF is named", host.status().message());
  }
  wheel::FatbinLimits limits;
  limits.max_entry_bytes = 4 << 20;
  limits.max_entries = 1000;
  auto module = wheel::ReadModuleManifest(bytes, "pkg/_C.so", limits);
  if (!module.ok()) {
    fuzz::Require(module.status().message().find("pkg/_C.so") != std::string::npos,
                  "a refused module is named", module.status().message());
    return 0;
  }
  std::string listing = wheel::FormatCuobjdumpStyle(*module);
  wheel::ArchManifest manifest;
  manifest.modules.push_back(*module);
  auto requested = arch::ParseArchList("9.0a;12.0a;12.1a");
  fuzz::Require(requested.ok(), "the requested list parses");
  wheel::FinishManifest(*requested, &manifest);
  (void)wheel::FormatManifest(manifest);
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
