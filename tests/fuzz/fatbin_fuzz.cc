// Fuzzes the fatbinary walker on raw section bytes (seeds: the .nv_fatbin sections of the
// modules nvcc builds for the wheel tests, plain, LZ4 and ZSTD). Properties: nothing
// crashes or leaks, no payload is larger than the limit, and every entry lies inside the
// section.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/wheel/elf/fatbin.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

int FuzzOne(const uint8_t* data, size_t size) {
  std::string_view section(reinterpret_cast<const char*>(data), size);
  wheel::FatbinLimits limits;
  limits.max_entry_bytes = 4 << 20;  // keeps one run's memory small
  limits.max_entries = 1000;
  int entries = 0;
  Status st = wheel::WalkFatbin(
      section, limits, [&](const wheel::FatbinEntry& e, std::string_view payload) {
        ++entries;
        fuzz::Require(payload.size() <= limits.max_entry_bytes, "payload within the limit",
                      std::to_string(payload.size()));
        fuzz::Require(e.offset < section.size(), "entry header inside the section",
                      std::to_string(e.offset));
        return Status::Ok();
      });
  fuzz::Require(entries <= limits.max_entries, "entry count within the limit");
  if (!st.ok()) fuzz::Require(!st.message().empty(), "a refused section says why");
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
