// What the dynamic loader needs of a wheel's host ELF files: the CPU they were built for
// (e_machine) and the newest glibc symbol version they need (.gnu.version_r), so a wheel is
// checked against what its platform tag promises. An x86_64 .so in an aarch64 wheel never
// loads; a manylinux_2_28 wheel whose .so needs GLIBC_2.34 fails on the distributions the
// tag names. Reads only headers and the version tables, bounds-checked like elf_reader.h.
// Pure functions; safe from any thread.
#ifndef FARM_COMMON_WHEEL_ELF_HOST_ELF_H_
#define FARM_COMMON_WHEEL_ELF_HOST_ELF_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/wheel/problem.h"

namespace farm::wheel {

inline constexpr uint16_t kElfMachineX86_64 = 62;
inline constexpr uint16_t kElfMachineAarch64 = 183;

struct GlibcVersion {
  int major = 0;
  int minor = 0;

  auto operator<=>(const GlibcVersion&) const = default;
  bool empty() const { return major == 0 && minor == 0; }
  std::string ToString() const;  // "2.34"
};

// The wheel-tag spelling of an ELF machine: "x86_64", "aarch64", "ppc64le", "s390x",
// "riscv64", "i686", "armv7l"; "ELF machine N" for any other.
std::string ElfMachineArch(uint16_t machine);

struct HostElf {
  std::string module;  // path inside the wheel
  uint16_t machine = 0;
  std::string arch;  // ElfMachineArch(machine)
  // The newest GLIBC_X.Y the file needs and one symbol that needs it ("pthread_create");
  // empty when it needs no versioned glibc symbol. GLIBC_ABI_DT_RELR counts as 2.36, the
  // release that introduced it.
  GlibcVersion newest_glibc;
  std::string newest_glibc_symbol;

  bool IsCudaCubin() const;  // EM_CUDA: device code, no host CPU
};

// Reads the machine and glibc needs of the 64-bit little-endian ELF in `bytes`. Fails
// (naming `module`) for a malformed ELF or version table.
Result<HostElf> ReadHostElf(std::string_view bytes, const std::string& module);

// The glibc a manylinux platform tag promises to need at most: manylinux_X_Y_<arch> ->
// X.Y, manylinux2014 -> 2.17, manylinux2010 -> 2.12, manylinux1 -> 2.5; nullopt for any
// other tag (linux_*, musllinux_*, any).
std::optional<GlibcVersion> ManylinuxGlibc(std::string_view platform_tag);

// Checks every host ELF (CUDA cubins are skipped) against the wheel's platform tags:
//   elf-machine-mismatch  its CPU is not the architecture of a platform tag other than
//                         "any" ("pkg/_C.so is built for x86_64; the wheel is tagged
//                         linux_aarch64");
//   manylinux-glibc       it needs a glibc newer than a manylinux tag promises.
void CheckHostElves(const std::vector<HostElf>& elves,
                    const std::vector<std::string>& platform_tags, std::vector<Problem>* out);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_ELF_HOST_ELF_H_
