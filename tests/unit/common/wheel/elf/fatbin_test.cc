// The ELF and fatbin readers on damaged input: every damage is an error, never a crash.
#include "common/wheel/elf/fatbin.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/wheel/elf/elf_reader.h"
#include "common/wheel/manifest.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/elf/fatbin_fixture.h"

namespace farm::wheel {
namespace {

// Offset and size of .nv_fatbin in `so`.
std::pair<uint64_t, uint64_t> FatbinSection(const std::string& so) {
  Result<ElfFile> elf = ElfFile::Parse(so);
  EXPECT_TRUE(elf.ok()) << elf.status().ToString();
  if (!elf.ok()) return {0, 0};
  const ElfSection* s = elf->Find(".nv_fatbin");
  EXPECT_NE(s, nullptr);
  return s == nullptr ? std::pair<uint64_t, uint64_t>{0, 0} : std::pair{s->offset, s->size};
}

std::vector<FatbinEntry> Entries(std::string_view section, Status* status,
                                 const FatbinLimits& limits = {}) {
  std::vector<FatbinEntry> out;
  *status = WalkFatbin(section, limits, [&](const FatbinEntry& e, std::string_view) {
    out.push_back(e);
    return Status::Ok();
  });
  return out;
}

template <typename T>
void Store(std::string* bytes, uint64_t offset, T value) {
  std::memcpy(bytes->data() + offset, &value, sizeof value);
}

TEST(FatbinTest, EntryHeadersAsNvccWritesThem) {
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", so);
  auto [off, size] = FatbinSection(so);
  Status s;
  std::vector<FatbinEntry> entries = Entries(std::string_view(so).substr(off, size), &s);
  ASSERT_OK(s);
  ASSERT_EQ(entries.size(), 8u);
  for (const FatbinEntry& e : entries) {
    EXPECT_EQ(e.kind, kFatbinKindElf);
    EXPECT_EQ(e.version, 0x0101);
    EXPECT_EQ(e.compression, Compression::kZstd);
    EXPECT_EQ(e.padded_size % 8, 0u);
    // Observed with nvcc 13.0: 64-byte headers below sm_100, longer ones above.
    EXPECT_EQ(e.header_size == 64, e.sm < 100) << e.sm << " " << e.header_size;
    EXPECT_EQ((e.flags & kFatbinFlagArchSpecific) != 0, e.sm != 80) << e.sm;
  }
}

TEST(FatbinTest, ZeroPaddingBetweenContainersIsTolerated) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  auto [off, size] = FatbinSection(so);
  std::string section = so.substr(off, size);
  uint64_t first = 16 + *reinterpret_cast<const uint64_t*>(section.data() + 8);
  ASSERT_LT(first, section.size());
  std::string padded = section.substr(0, first) + std::string(24, '\0') + section.substr(first) +
                       std::string(16, '\0');
  Status s;
  EXPECT_EQ(Entries(padded, &s).size(), 8u);
  EXPECT_OK(s);
  // Padding that is not zero is not silently skipped.
  padded[first + 3] = 'x';
  Entries(padded, &s);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

TEST(FatbinTest, ContainerClaimingTooMuchIsAnError) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  auto [off, size] = FatbinSection(so);
  std::string bad = so;
  Store<uint64_t>(&bad, off + 8, uint64_t{1} << 40);
  Result<ModuleManifest> m = ReadModuleManifest(bad, "m.so");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
  EXPECT_NE(m.status().message().find("claims"), std::string::npos) << m.status().ToString();
}

TEST(FatbinTest, EntryHeaderSizesAreBoundsChecked) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  auto [off, size] = FatbinSection(so);
  for (uint64_t field : {4u, 8u}) {  // entry header size, padded payload size
    std::string bad = so;
    Store<uint32_t>(&bad, off + 16 + field, 0xfffffff0u);
    Result<ModuleManifest> m = ReadModuleManifest(bad, "m.so");
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << field << m.status().ToString();
  }
}

TEST(FatbinTest, DecompressionSizeIsCheckedAndCapped) {
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", so);
  auto [off, size] = FatbinSection(so);
  std::string wrong = so;
  uint64_t usz;
  std::memcpy(&usz, so.data() + off + 16 + 56, 8);
  Store<uint64_t>(&wrong, off + 16 + 56, usz + 8);
  Result<ModuleManifest> m = ReadModuleManifest(wrong, "m.so");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
  EXPECT_NE(m.status().message().find("ZSTD"), std::string::npos) << m.status().ToString();
  FatbinLimits tiny;
  tiny.max_entry_bytes = 512;
  Result<ModuleManifest> capped = ReadModuleManifest(so, "m.so", tiny);
  EXPECT_EQ(capped.status().code(), StatusCode::kResourceExhausted) << capped.status().ToString();
}

TEST(FatbinTest, CorruptLz4PayloadIsAnError) {
  FARM_LOAD_MODULE_OR_SKIP("multi_lz4", so);
  auto [off, size] = FatbinSection(so);
  std::string bad = so;
  uint32_t header;
  std::memcpy(&header, so.data() + off + 16 + 4, 4);
  // Overwrite the first LZ4 token and literals: the block no longer decodes to the size.
  std::memset(bad.data() + off + 16 + header, 0xff, 16);
  Result<ModuleManifest> m = ReadModuleManifest(bad, "m.so");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
}

TEST(FatbinTest, ImpossibleSmNumberIsAnError) {
  // Found by tests/fuzz/elf_manifest_fuzz: sm 4294967295 overflowed the image name.
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  auto [off, size] = FatbinSection(so);
  for (uint32_t sm : {1000u, 0xFFFFFFFFu}) {
    std::string bad = so;
    Store<uint32_t>(&bad, off + 16 + 28, sm);  // the first entry's sm
    Result<ModuleManifest> m = ReadModuleManifest(bad, "m.so");
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
    EXPECT_NE(m.status().message().find("claims sm " + std::to_string(sm)), std::string::npos)
        << m.status().message();
  }
}

TEST(FatbinTest, CubinThatIsNotCudaIsAnError) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  auto [off, size] = FatbinSection(so);
  std::string bad = so;
  uint32_t header;
  std::memcpy(&header, so.data() + off + 16 + 4, 4);
  Store<uint16_t>(&bad, off + 16 + header + 18, 62);  // e_machine = x86-64
  Result<ModuleManifest> m = ReadModuleManifest(bad, "m.so");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
  EXPECT_NE(m.status().message().find("EM_CUDA"), std::string::npos);
}

TEST(FatbinTest, EveryTruncationOfTheElfIsAnError) {
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", so);
  ASSERT_OK(ReadModuleManifest(so, "m.so").status());
  // Section headers sit at the end of the file, so every shorter prefix must fail.
  int checked = 0;
  for (size_t len = 0; len < so.size(); len += 997) {
    Result<ModuleManifest> m = ReadModuleManifest(std::string_view(so).substr(0, len), "m.so");
    EXPECT_FALSE(m.ok()) << len;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(FatbinTest, TruncatedFatbinSectionIsAnError) {
  FARM_LOAD_MODULE_OR_SKIP("multi_lz4", so);
  auto [off, size] = FatbinSection(so);
  std::string_view section = std::string_view(so).substr(off, size);
  int checked = 0;
  for (uint64_t len = 1; len < size; len += 61) {
    Status s;
    Entries(section.substr(0, len), &s);
    EXPECT_FALSE(s.ok()) << len;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(FatbinTest, RandomDamageNeverCrashes) {
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", so);
  auto [off, size] = FatbinSection(so);
  std::mt19937 rng(12345);
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bad = so;
    for (int k = 0; k < 4; ++k) bad[off + rng() % size] = static_cast<char>(rng());
    Result<ModuleManifest> m = ReadModuleManifest(bad, "m.so");
    if (!m.ok()) {
      ++errors;
      continue;
    }
    for (const CodeImage& image : m->images) EXPECT_FALSE(image.name.empty());
  }
  EXPECT_GT(errors, 0);
}

TEST(FatbinTest, ElfReaderRejectsWhatItCannotRead) {
  EXPECT_EQ(ElfFile::Parse("MZ\x90").status().code(), StatusCode::kInvalidArgument);
  std::string elf32(64, '\0');
  std::memcpy(elf32.data(),
              "\x7f"
              "ELF\x01\x01",
              6);
  EXPECT_EQ(ElfFile::Parse(elf32).status().code(), StatusCode::kInvalidArgument);
  std::string elf64(64, '\0');
  std::memcpy(elf64.data(),
              "\x7f"
              "ELF\x02\x01",
              6);
  Store<uint64_t>(&elf64, 40, 1 << 20);  // section headers far past the end
  Store<uint16_t>(&elf64, 58, 64);
  Store<uint16_t>(&elf64, 60, 3);
  EXPECT_EQ(ElfFile::Parse(elf64).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace farm::wheel
