#include "common/wheel/elf/fatbin.h"

#include <lz4.h>
#include <zstd.h>

#include <climits>

#include "common/wheel/elf/elf_reader.h"

namespace farm::wheel {
namespace {

constexpr uint32_t kOldFatbinMagic = 0x1EE55A01;
constexpr uint64_t kContainerHeaderBytes = 16;
constexpr uint64_t kEntryHeaderBytes = 64;
constexpr uint64_t kFlagZlibOld = 0x1000;

std::string At(uint64_t offset) { return "at offset " + std::to_string(offset); }

Result<std::string> Decompress(const FatbinEntry& e, std::string_view src) {
  std::string out(e.uncompressed_size, '\0');
  if (e.compression == Compression::kLz4) {
    if (src.size() > INT_MAX || out.size() > INT_MAX) {
      return Status::ResourceExhausted("LZ4 entry too large " + At(e.offset));
    }
    int n = LZ4_decompress_safe(src.data(), out.data(), static_cast<int>(src.size()),
                                static_cast<int>(out.size()));
    if (n < 0 || static_cast<uint64_t>(n) != e.uncompressed_size) {
      return Status::DataLoss("LZ4 payload of the entry " + At(e.offset) +
                              " does not decompress to the " + std::to_string(e.uncompressed_size) +
                              " bytes its header states");
    }
    return out;
  }
  size_t n = ZSTD_decompress(out.data(), out.size(), src.data(), src.size());
  if (ZSTD_isError(n) || n != e.uncompressed_size) {
    std::string why = ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size " + std::to_string(n);
    return Status::DataLoss("ZSTD payload of the entry " + At(e.offset) +
                            " does not decompress to the " + std::to_string(e.uncompressed_size) +
                            " bytes its header states (" + why + ")");
  }
  return out;
}

class Walker {
 public:
  Walker(std::string_view section, const FatbinLimits& limits, const FatbinVisitor& visitor)
      : s_(section), limits_(limits), visitor_(visitor) {}

  Status Run() {
    uint64_t pos = 0;
    int container = 0;
    while (pos < s_.size()) {
      FARM_ASSIGN_OR_RETURN(uint64_t start, NextContainer(pos));
      if (start >= s_.size()) break;
      FARM_ASSIGN_OR_RETURN(pos, WalkContainer(start, container++));
    }
    if (container == 0) return Status::DataLoss("no fatbin container in the section");
    return Status::Ok();
  }

 private:
  // The offset of the next container at or after `pos`, or the section size when only
  // zero padding remains.
  Result<uint64_t> NextContainer(uint64_t pos) const {
    for (uint64_t p = pos; p < s_.size(); ++p) {
      if (p % 8 == 0 && p + 4 <= s_.size()) {
        uint32_t magic = LoadU32(s_, p);
        if (magic == kFatbinMagic) return p;
        if (magic == kOldFatbinMagic) {
          return Status::InvalidArgument("old-style fatbin (magic 0x1EE55A01) " + At(p) +
                                         " is not supported");
        }
      }
      if (s_[p] != 0) {
        return Status::DataLoss("unrecognised bytes " + At(p) +
                                " where a fatbin container (magic 0xBA55ED50) was expected");
      }
    }
    return s_.size();
  }

  Result<uint64_t> WalkContainer(uint64_t start, int container) {
    if (!InBounds(start, kContainerHeaderBytes, s_.size())) {
      return Status::DataLoss("fatbin container header " + At(start) + " is truncated");
    }
    uint64_t header = LoadU16(s_, start + 6);
    uint64_t fat = LoadU64(s_, start + 8);
    if (header < kContainerHeaderBytes || !InBounds(start, header, s_.size()) ||
        !InBounds(start + header, fat, s_.size())) {
      return Status::DataLoss("fatbin container " + At(start) + " claims " +
                              std::to_string(header) + "+" + std::to_string(fat) +
                              " bytes but the section has only " +
                              std::to_string(s_.size() - start) + " left");
    }
    uint64_t end = start + header + fat;
    int index = 0;
    for (uint64_t q = start + header; q < end;) {
      FARM_ASSIGN_OR_RETURN(q, WalkEntry(q, end, container, index++));
    }
    return end;
  }

  Result<FatbinEntry> ReadEntryHeader(uint64_t q, uint64_t end) const {
    if (!InBounds(q, kEntryHeaderBytes, end)) {
      return Status::DataLoss("fatbin entry header " + At(q) + " runs past its container");
    }
    FatbinEntry e;
    e.offset = q;
    e.kind = LoadU16(s_, q);
    e.version = LoadU16(s_, q + 2);
    e.header_size = LoadU32(s_, q + 4);
    e.padded_size = LoadU64(s_, q + 8);
    e.compressed_size = LoadU32(s_, q + 16);
    e.code_version = LoadU32(s_, q + 24);
    e.sm = LoadU32(s_, q + 28);
    e.flags = LoadU64(s_, q + 40);
    e.uncompressed_size = LoadU64(s_, q + 56);
    if (e.header_size < kEntryHeaderBytes || !InBounds(q, e.header_size, end) ||
        !InBounds(q + e.header_size, e.padded_size, end)) {
      return Status::DataLoss("fatbin entry " + At(q) + " (header " +
                              std::to_string(e.header_size) + ", payload " +
                              std::to_string(e.padded_size) + ") runs past its container");
    }
    // SM numbers are major * 10 + minor (20 .. 121 today); a larger one is damage, and
    // would overflow the arithmetic that names the image (found by tests/fuzz).
    if (e.sm > kMaxSm) {
      return Status::DataLoss("fatbin entry " + At(q) + " claims sm " + std::to_string(e.sm) +
                              "; at most " + std::to_string(kMaxSm) + " is possible");
    }
    return e;
  }

  Status SetCompression(FatbinEntry* e) const {
    bool lz4 = (e->flags & kFatbinFlagLz4) != 0;
    bool zstd = (e->flags & kFatbinFlagZstd) != 0;
    if ((lz4 && zstd) || (e->flags & kFlagZlibOld) != 0) {
      return Status::InvalidArgument("fatbin entry " + At(e->offset) +
                                     " has unsupported compression flags " +
                                     std::to_string(e->flags));
    }
    e->compression = lz4 ? Compression::kLz4 : zstd ? Compression::kZstd : Compression::kNone;
    if (e->compression == Compression::kNone) return Status::Ok();
    if (e->compressed_size == 0 || e->compressed_size > e->padded_size) {
      return Status::DataLoss("fatbin entry " + At(e->offset) + " has compressed size " +
                              std::to_string(e->compressed_size) + " for a payload of " +
                              std::to_string(e->padded_size) + " bytes");
    }
    if (e->uncompressed_size > limits_.max_entry_bytes) {
      return Status::ResourceExhausted("fatbin entry " + At(e->offset) + " would decompress to " +
                                       std::to_string(e->uncompressed_size) + " bytes; limit " +
                                       std::to_string(limits_.max_entry_bytes));
    }
    return Status::Ok();
  }

  Result<uint64_t> WalkEntry(uint64_t q, uint64_t end, int container, int index) {
    if (++entries_ > limits_.max_entries) {
      return Status::ResourceExhausted("more than " + std::to_string(limits_.max_entries) +
                                       " fatbin entries");
    }
    FARM_ASSIGN_OR_RETURN(FatbinEntry e, ReadEntryHeader(q, end));
    e.container = container;
    e.index = index;
    FARM_RETURN_IF_ERROR(SetCompression(&e));
    std::string_view payload = s_.substr(q + e.header_size, e.padded_size);
    if (e.compression == Compression::kNone) {
      FARM_RETURN_IF_ERROR(visitor_(e, payload));
    } else {
      FARM_ASSIGN_OR_RETURN(std::string plain, Decompress(e, payload.substr(0, e.compressed_size)));
      FARM_RETURN_IF_ERROR(visitor_(e, plain));
    }
    return q + e.header_size + e.padded_size;
  }

  std::string_view s_;
  const FatbinLimits& limits_;
  const FatbinVisitor& visitor_;
  int entries_ = 0;
};

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kLz4:
      return "lz4";
    case Compression::kZstd:
      return "zstd";
    case Compression::kNone:
      break;
  }
  return "none";
}

Status WalkFatbin(std::string_view section, const FatbinLimits& limits,
                  const FatbinVisitor& visitor) {
  return Walker(section, limits, visitor).Run();
}

}  // namespace farm::wheel
