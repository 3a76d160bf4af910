// A bounds-checked reader for ELF64 little-endian images held in memory: host shared
// objects of a wheel and the CUDA cubins inside their fatbinaries. Every offset and size
// read from the file is checked against the buffer before use, so a truncated or hostile
// file yields an error, never an out-of-range read. An ElfFile points into the caller's
// buffer (which must outlive it) and is immutable after Parse, so it may be shared between
// threads.
#ifndef FARM_COMMON_WHEEL_ELF_ELF_READER_H_
#define FARM_COMMON_WHEEL_ELF_ELF_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

inline constexpr uint16_t kElfTypeExec = 2;
inline constexpr uint16_t kElfTypeDyn = 3;
inline constexpr uint16_t kElfMachineCuda = 190;

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;  // sh_link: the string table of symbol and version sections
  uint32_t info = 0;  // sh_info: e.g. the number of entries of .gnu.version_r
};

// One note of a SHT_NOTE section. `desc` points into the ElfFile's buffer.
struct ElfNote {
  std::string owner;
  uint32_t type = 0;
  std::string_view desc;
};

// True when `head` starts with the ELF magic "\x7fELF".
bool IsElf(std::string_view head);

class ElfFile {
 public:
  // Reads the ELF header and all section headers of `data`. On success every section's
  // bytes are known to lie inside `data`; fails with InvalidArgument for anything that is
  // not ELF64 little-endian, and DataLoss for truncated or inconsistent headers.
  static Result<ElfFile> Parse(std::string_view data);

  uint16_t type() const { return type_; }
  uint16_t machine() const { return machine_; }
  uint32_t flags() const { return flags_; }
  uint8_t os_abi() const { return os_abi_; }
  uint8_t abi_version() const { return abi_version_; }
  const std::vector<ElfSection>& sections() const { return sections_; }

  // The first section named `name`, or nullptr.
  const ElfSection* Find(std::string_view name) const;
  // The bytes of `section` (empty for SHT_NOBITS).
  std::string_view Data(const ElfSection& section) const;
  // The notes of a SHT_NOTE section. DataLoss when a note runs past the section.
  Result<std::vector<ElfNote>> Notes(const ElfSection& section) const;

 private:
  Status ReadSectionHeaders(uint64_t shoff, uint16_t shentsize, uint64_t shnum, uint64_t shstrndx);

  std::string_view data_;
  uint16_t type_ = 0;
  uint16_t machine_ = 0;
  uint32_t flags_ = 0;
  uint8_t os_abi_ = 0;
  uint8_t abi_version_ = 0;
  std::vector<ElfSection> sections_;
};

// Little-endian loads; callers check bounds first.
uint16_t LoadU16(std::string_view data, uint64_t offset);
uint32_t LoadU32(std::string_view data, uint64_t offset);
uint64_t LoadU64(std::string_view data, uint64_t offset);

// True when [offset, offset + size) lies within a buffer of `total` bytes (no overflow).
inline bool InBounds(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_ELF_ELF_READER_H_
