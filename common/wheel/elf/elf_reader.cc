#include "common/wheel/elf/elf_reader.h"

#include <cstring>

namespace farm::wheel {
namespace {

constexpr uint64_t kElfHeaderBytes = 64;
constexpr uint64_t kSectionHeaderBytes = 64;
constexpr uint32_t kShtNote = 7;
constexpr uint32_t kShtNobits = 8;
constexpr uint16_t kShnXindex = 0xffff;

uint64_t Align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

}  // namespace

uint16_t LoadU16(std::string_view d, uint64_t o) {
  uint16_t v;
  std::memcpy(&v, d.data() + o, sizeof v);
  return v;  // the farm builds only for little-endian hosts (x86_64, aarch64)
}
uint32_t LoadU32(std::string_view d, uint64_t o) {
  uint32_t v;
  std::memcpy(&v, d.data() + o, sizeof v);
  return v;
}
uint64_t LoadU64(std::string_view d, uint64_t o) {
  uint64_t v;
  std::memcpy(&v, d.data() + o, sizeof v);
  return v;
}

bool IsElf(std::string_view head) {
  return head.size() >= 4 && head.substr(0, 4) ==
                                 "\x7f"
                                 "ELF";
}

Result<ElfFile> ElfFile::Parse(std::string_view data) {
  if (!IsElf(data)) return Status::InvalidArgument("not an ELF file (bad magic)");
  if (data.size() < kElfHeaderBytes) {
    return Status::DataLoss("ELF header truncated: " + std::to_string(data.size()) + " bytes");
  }
  if (data[4] != 2) return Status::InvalidArgument("not a 64-bit ELF file (EI_CLASS != 2)");
  if (data[5] != 1) return Status::InvalidArgument("not a little-endian ELF file (EI_DATA != 1)");
  ElfFile elf;
  elf.data_ = data;
  elf.os_abi_ = static_cast<uint8_t>(data[7]);
  elf.abi_version_ = static_cast<uint8_t>(data[8]);
  elf.type_ = LoadU16(data, 16);
  elf.machine_ = LoadU16(data, 18);
  elf.flags_ = LoadU32(data, 48);
  uint64_t shoff = LoadU64(data, 40);
  uint16_t shentsize = LoadU16(data, 58);
  uint64_t shnum = LoadU16(data, 60);
  uint64_t shstrndx = LoadU16(data, 62);
  FARM_RETURN_IF_ERROR(elf.ReadSectionHeaders(shoff, shentsize, shnum, shstrndx));
  return elf;
}

Status ElfFile::ReadSectionHeaders(uint64_t shoff, uint16_t shentsize, uint64_t shnum,
                                   uint64_t shstrndx) {
  if (shoff == 0) return Status::Ok();  // no section headers: nothing to find
  if (shentsize < kSectionHeaderBytes) {
    return Status::DataLoss("ELF section header size " + std::to_string(shentsize) + " < 64");
  }
  if (!InBounds(shoff, kSectionHeaderBytes, data_.size())) {
    return Status::DataLoss("ELF section headers at " + std::to_string(shoff) +
                            " lie past the end of the file (" + std::to_string(data_.size()) +
                            " bytes)");
  }
  // Extended numbering: counts that do not fit 16 bits live in section header 0.
  if (shnum == 0) shnum = LoadU64(data_, shoff + 32);
  if (shstrndx == kShnXindex) shstrndx = LoadU32(data_, shoff + 40);
  if (shnum > data_.size() / shentsize || !InBounds(shoff, shnum * shentsize, data_.size())) {
    return Status::DataLoss("ELF section header table (" + std::to_string(shnum) +
                            " entries) runs past the end of the file");
  }
  std::vector<uint32_t> name_offsets;
  for (uint64_t i = 0; i < shnum; ++i) {
    uint64_t h = shoff + i * shentsize;
    ElfSection s;
    s.type = LoadU32(data_, h + 4);
    s.offset = LoadU64(data_, h + 24);
    s.size = LoadU64(data_, h + 32);
    s.link = LoadU32(data_, h + 40);
    s.info = LoadU32(data_, h + 44);
    if (s.type != kShtNobits && !InBounds(s.offset, s.size, data_.size())) {
      return Status::DataLoss("ELF section " + std::to_string(i) + " [" + std::to_string(s.offset) +
                              ", +" + std::to_string(s.size) + ") lies outside the file (" +
                              std::to_string(data_.size()) + " bytes)");
    }
    name_offsets.push_back(LoadU32(data_, h));
    sections_.push_back(std::move(s));
  }
  if (shstrndx >= sections_.size()) {
    return Status::DataLoss("ELF section name table index " + std::to_string(shstrndx) +
                            " out of range");
  }
  std::string_view names = Data(sections_[shstrndx]);
  for (size_t i = 0; i < sections_.size(); ++i) {
    uint32_t off = name_offsets[i];
    size_t end = off < names.size() ? names.find('\0', off) : names.npos;
    if (end == names.npos) {
      return Status::DataLoss("ELF section " + std::to_string(i) + " has a name offset " +
                              std::to_string(off) + " outside the name table");
    }
    sections_[i].name = std::string(names.substr(off, end - off));
  }
  return Status::Ok();
}

const ElfSection* ElfFile::Find(std::string_view name) const {
  for (const ElfSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string_view ElfFile::Data(const ElfSection& s) const {
  if (s.type == kShtNobits) return {};
  return data_.substr(s.offset, s.size);
}

Result<std::vector<ElfNote>> ElfFile::Notes(const ElfSection& section) const {
  std::vector<ElfNote> out;
  if (section.type != kShtNote) return out;
  std::string_view d = Data(section);
  uint64_t pos = 0;
  while (pos + 12 <= d.size()) {
    uint64_t namesz = LoadU32(d, pos);
    uint64_t descsz = LoadU32(d, pos + 4);
    uint32_t type = LoadU32(d, pos + 8);
    uint64_t name_at = pos + 12;
    uint64_t desc_at = name_at + Align4(namesz);
    if (!InBounds(name_at, Align4(namesz), d.size()) || !InBounds(desc_at, descsz, d.size())) {
      return Status::DataLoss("ELF note at offset " + std::to_string(pos) + " of section " +
                              section.name + " runs past the section");
    }
    std::string_view owner = d.substr(name_at, namesz);
    while (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
    out.push_back({std::string(owner), type, d.substr(desc_at, descsz)});
    pos = desc_at + Align4(descsz);
  }
  return out;
}

}  // namespace farm::wheel
