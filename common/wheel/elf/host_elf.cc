#include "common/wheel/elf/host_elf.h"

#include <charconv>
#include <map>

#include "common/wheel/elf/elf_reader.h"
#include "common/wheel/wheel_name.h"

namespace farm::wheel {
namespace {

constexpr uint32_t kShtDynsym = 11;
constexpr uint32_t kShtGnuVerneed = 0x6ffffffe;
constexpr uint32_t kShtGnuVersym = 0x6fffffff;
constexpr uint64_t kVerneedBytes = 16;  // Elf64_Verneed and Elf64_Vernaux are both 16 bytes
constexpr uint64_t kSymBytes = 24;      // Elf64_Sym
constexpr uint16_t kVersymHidden = 0x8000;
constexpr GlibcVersion kDtRelrGlibc{2, 36};

// "GLIBC_2.34" -> 2.34, "GLIBC_2.2.5" -> 2.2; nullopt for GLIBC_PRIVATE and other names.
std::optional<GlibcVersion> ParseGlibcVersionName(std::string_view name) {
  if (name == "GLIBC_ABI_DT_RELR") return kDtRelrGlibc;
  constexpr std::string_view kPrefix = "GLIBC_";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view rest = name.substr(kPrefix.size());
  GlibcVersion v;
  const char* end = rest.data() + rest.size();
  auto [p, ec] = std::from_chars(rest.data(), end, v.major);
  if (ec != std::errc() || p == end || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, v.minor);
  if (ec2 != std::errc() || (q != end && *q != '.')) return std::nullopt;
  return v;
}

std::string_view CString(std::string_view table, uint64_t offset) {
  if (offset >= table.size()) return {};
  size_t end = table.find('\0', offset);
  return end == table.npos ? std::string_view() : table.substr(offset, end - offset);
}

const ElfSection* SectionOfType(const ElfFile& elf, uint32_t type) {
  for (const ElfSection& s : elf.sections()) {
    if (s.type == type) return &s;
  }
  return nullptr;
}

std::string_view LinkedStrings(const ElfFile& elf, const ElfSection& section) {
  if (section.link >= elf.sections().size()) return {};
  return elf.Data(elf.sections()[section.link]);
}

// Version index (vna_other) -> glibc version, from .gnu.version_r.
Result<std::map<uint16_t, GlibcVersion>> GlibcNeeds(const ElfFile& elf) {
  std::map<uint16_t, GlibcVersion> out;
  const ElfSection* verneed = SectionOfType(elf, kShtGnuVerneed);
  if (verneed == nullptr) return out;
  std::string_view d = elf.Data(*verneed);
  std::string_view strings = LinkedStrings(elf, *verneed);
  const uint64_t max_records = d.size() / kVerneedBytes;  // bounds every walk below
  uint64_t pos = 0;
  for (uint64_t files = 0; files < verneed->info && files < max_records; ++files) {
    if (!InBounds(pos, kVerneedBytes, d.size())) {
      return Status::DataLoss(".gnu.version_r entry at " + std::to_string(pos) +
                              " runs past the section");
    }
    uint64_t count = LoadU16(d, pos + 2);
    uint64_t aux = pos + LoadU32(d, pos + 8);
    for (uint64_t i = 0; i < count && i < max_records; ++i) {
      if (!InBounds(aux, kVerneedBytes, d.size())) {
        return Status::DataLoss(".gnu.version_r auxiliary entry at " + std::to_string(aux) +
                                " runs past the section");
      }
      uint16_t index = LoadU16(d, aux + 6);
      if (auto v = ParseGlibcVersionName(CString(strings, LoadU32(d, aux + 8)))) out[index] = *v;
      uint32_t next = LoadU32(d, aux + 12);
      if (next == 0) break;
      aux += next;
    }
    uint32_t next = LoadU32(d, pos + 12);
    if (next == 0) break;
    pos += next;
  }
  return out;
}

// The first undefined dynamic symbol bound to version `index`, or "".
std::string SymbolOfVersion(const ElfFile& elf, uint16_t index) {
  const ElfSection* versym = SectionOfType(elf, kShtGnuVersym);
  const ElfSection* dynsym = SectionOfType(elf, kShtDynsym);
  if (versym == nullptr || dynsym == nullptr) return "";
  std::string_view versions = elf.Data(*versym);
  std::string_view symbols = elf.Data(*dynsym);
  std::string_view names = LinkedStrings(elf, *dynsym);
  uint64_t count = std::min<uint64_t>(versions.size() / 2, symbols.size() / kSymBytes);
  for (uint64_t i = 1; i < count; ++i) {
    if ((LoadU16(versions, i * 2) & ~kVersymHidden) != index) continue;
    uint64_t sym = i * kSymBytes;
    if (LoadU16(symbols, sym + 6) != 0) continue;  // st_shndx: defined here, not needed
    std::string_view name = CString(names, LoadU32(symbols, sym));
    if (!name.empty()) return std::string(name);
  }
  return "";
}

}  // namespace

std::string GlibcVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string ElfMachineArch(uint16_t machine) {
  switch (machine) {
    case kElfMachineX86_64:
      return "x86_64";
    case kElfMachineAarch64:
      return "aarch64";
    case 3:
      return "i686";
    case 40:
      return "armv7l";
    case 21:
      return "ppc64le";
    case 22:
      return "s390x";
    case 243:
      return "riscv64";
    case kElfMachineCuda:
      return "cuda";
    default:
      return "ELF machine " + std::to_string(machine);
  }
}

bool HostElf::IsCudaCubin() const { return machine == kElfMachineCuda; }

Result<HostElf> ReadHostElf(std::string_view bytes, const std::string& module) {
  Result<ElfFile> elf = ElfFile::Parse(bytes);
  if (!elf.ok()) return elf.status().WithContext(module);
  HostElf out;
  out.module = module;
  out.machine = elf->machine();
  out.arch = ElfMachineArch(out.machine);
  Result<std::map<uint16_t, GlibcVersion>> needs = GlibcNeeds(*elf);
  if (!needs.ok()) return needs.status().WithContext(module);
  uint16_t newest_index = 0;
  for (const auto& [index, version] : *needs) {
    if (out.newest_glibc < version) {
      out.newest_glibc = version;
      newest_index = index;
    }
  }
  if (!out.newest_glibc.empty()) out.newest_glibc_symbol = SymbolOfVersion(*elf, newest_index);
  return out;
}

std::optional<GlibcVersion> ManylinuxGlibc(std::string_view tag) {
  if (tag.starts_with("manylinux2014_")) return GlibcVersion{2, 17};
  if (tag.starts_with("manylinux2010_")) return GlibcVersion{2, 12};
  if (tag.starts_with("manylinux1_")) return GlibcVersion{2, 5};
  constexpr std::string_view kPrefix = "manylinux_";
  if (!tag.starts_with(kPrefix)) return std::nullopt;
  std::string_view rest = tag.substr(kPrefix.size());
  GlibcVersion v;
  const char* end = rest.data() + rest.size();
  auto [p, ec] = std::from_chars(rest.data(), end, v.major);
  if (ec != std::errc() || p == end || *p != '_') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, v.minor);
  if (ec2 != std::errc() || q == end || *q != '_') return std::nullopt;
  return v;
}

void CheckHostElves(const std::vector<HostElf>& elves,
                    const std::vector<std::string>& platform_tags, std::vector<Problem>* out) {
  for (const HostElf& elf : elves) {
    if (elf.IsCudaCubin()) continue;
    for (const std::string& tag : platform_tags) {
      if (tag == "any") continue;
      if (PlatformArch(tag) != elf.arch) {
        out->push_back({"elf-machine-mismatch", elf.module,
                        "built for " + elf.arch + "; the wheel is tagged " + tag});
        continue;
      }
      std::optional<GlibcVersion> promised = ManylinuxGlibc(tag);
      if (promised && *promised < elf.newest_glibc) {
        std::string symbol =
            elf.newest_glibc_symbol.empty() ? "" : " (" + elf.newest_glibc_symbol + ")";
        out->push_back({"manylinux-glibc", elf.module,
                        "needs GLIBC_" + elf.newest_glibc.ToString() + symbol + "; " + tag +
                            " promises glibc " + promised->ToString()});
      }
    }
  }
}

}  // namespace farm::wheel
