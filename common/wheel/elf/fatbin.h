// Walks a CUDA fatbinary (the bytes of a host ELF's .nv_fatbin or __nv_relfatbin section):
// containers (magic 0xBA55ED50) back to back, each holding entries of PTX text or ELF
// cubins, compressed with LZ4 or ZSTD when their flags say so. The layout is documented in
// docs/wheel-checks.md. Every size read from the section is bounds-checked and every
// decompression is capped, so a corrupt section is an error, never a crash or an
// unbounded allocation. Stateless functions; safe from any thread.
#ifndef FARM_COMMON_WHEEL_ELF_FATBIN_H_
#define FARM_COMMON_WHEEL_ELF_FATBIN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::wheel {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr uint16_t kFatbinKindPtx = 1;
inline constexpr uint16_t kFatbinKindElf = 2;
inline constexpr uint64_t kFatbinFlagLz4 = 0x2000;
inline constexpr uint64_t kFatbinFlagZstd = 0x8000;
// Observed with nvcc 13.0 (see docs/wheel-checks.md): set on sm_XXa / compute_XXa images
// and on sm_XXf / compute_XXf images respectively.
inline constexpr uint64_t kFatbinFlagArchSpecific = 0x100000;
inline constexpr uint64_t kFatbinFlagFamilySpecific = 0x200000;

// Largest SM number an entry may carry (major 99, minor 9).
inline constexpr uint32_t kMaxSm = 999;

enum class Compression { kNone, kLz4, kZstd };
// "none", "lz4", "zstd".
const char* CompressionName(Compression c);

struct FatbinLimits {
  // Largest decompressed payload of one entry.
  uint64_t max_entry_bytes = uint64_t{1} << 30;
  // Entries in one section, all containers together.
  int max_entries = 100'000;
};

// One entry header, as read from the section.
struct FatbinEntry {
  int container = 0;    // 0-based container index within the section
  int index = 0;        // 0-based entry index within its container
  uint64_t offset = 0;  // offset of the entry header within the section
  uint16_t kind = 0;    // kFatbinKindPtx or kFatbinKindElf (others are reported too)
  uint16_t version = 0;
  uint32_t header_size = 0;
  uint64_t padded_size = 0;  // payload bytes reserved after the header
  uint32_t compressed_size = 0;
  uint32_t code_version = 0;  // major << 16 | minor (PTX ISA version for PTX entries)
  uint32_t sm = 0;            // decimal: 90, 120, 121
  uint64_t flags = 0;
  uint64_t uncompressed_size = 0;
  Compression compression = Compression::kNone;
};

// Receives each entry with its payload (decompressed when compressed; for uncompressed
// entries the padded payload). Returning an error stops the walk with that error.
using FatbinVisitor = std::function<Status(const FatbinEntry& entry, std::string_view payload)>;

// Walks every container and entry of `section`. Zero bytes between containers (alignment
// padding) are skipped by scanning for the magic at 8-byte alignment; any other unknown
// bytes are an error. On success every entry was visited; fails with DataLoss naming the
// offset when a header runs past the section, sizes are inconsistent, decompression fails
// or yields a size other than the header's, InvalidArgument for unknown compression flags
// or an old-style fatbin, and ResourceExhausted when a limit is crossed.
Status WalkFatbin(std::string_view section, const FatbinLimits& limits,
                  const FatbinVisitor& visitor);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_ELF_FATBIN_H_
