// Arch manifests of shared objects nvcc built at build time, alone and inside wheels.
#include "common/wheel/manifest.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/wheel/inspect.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/elf/fatbin_fixture.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

constexpr char kModule[] = "attn_example/_attn_example.so";

std::vector<arch::Target> Targets(const std::string& list) {
  Result<std::vector<arch::Target>> t = arch::ParseArchList(list);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : std::vector<arch::Target>{};
}

std::string Versions(const std::vector<arch::Version>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : " ") + x.ToString();
  return out;
}

ArchManifest ManifestOf(const std::string& bytes, const std::string& requested) {
  ArchManifest m;
  Result<ModuleManifest> mod = ReadModuleManifest(bytes, kModule);
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (mod.ok()) m.modules.push_back(*mod);
  FinishManifest(Targets(requested), &m);
  return m;
}

void ExpectMultiArch(const std::string& bytes, Compression compression) {
  ArchManifest m = ManifestOf(bytes, "8.0;9.0a;12.0a;12.1a");
  ASSERT_EQ(m.modules.size(), 1u);
  const ModuleManifest& mod = m.modules[0];
  EXPECT_EQ(mod.archs, (std::vector<std::string>{"sm_120a", "sm_121a", "sm_80", "sm_90a"}))
      << FormatManifest(m);
  // nvcc 13 writes two containers (device-link stub by nvlink, then the code by ptxas),
  // each with one cubin per target.
  ASSERT_EQ(mod.images.size(), 8u) << FormatManifest(m);
  for (const CodeImage& image : mod.images) {
    EXPECT_EQ(image.image.kind, arch::Image::Kind::kSass);
    EXPECT_EQ(image.compression, compression) << image.name;
    EXPECT_EQ(image.suffix_source, "tkinfo") << image.name;
  }
  EXPECT_EQ(mod.images[4].producer, "ptxas");
  EXPECT_TRUE(m.missing.empty()) << FormatManifest(m);
  EXPECT_EQ(Versions(m.runs_on), "8.0 8.6 8.7 8.9 9.0 12.0 12.1");
}

TEST(ManifestTest, MultiArchUncompressed) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  ExpectMultiArch(so, Compression::kNone);
}

TEST(ManifestTest, MultiArchCompressAllUsesZstd) {
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", so);
  ExpectMultiArch(so, Compression::kZstd);
}

TEST(ManifestTest, MultiArchSpeedModeUsesLz4) {
  FARM_LOAD_MODULE_OR_SKIP("multi_lz4", so);
  ExpectMultiArch(so, Compression::kLz4);
}

// "13.0" from the nvcc that built the test modules ("Cuda compilation tools, release 13.0,
// V13.0.88"), "" when it cannot be run.
std::string NvccRelease() {
  std::string cmd = std::string(FARM_WHEEL_TEST_NVCC) + " --version";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  size_t at = out.find("release ");
  if (at == std::string::npos) return "";
  return out.substr(at + 8, out.find(',', at) - at - 8);
}

TEST(ManifestTest, CubinsNameTheToolkitThatCompiledThem) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  std::string release = NvccRelease();
  ASSERT_FALSE(release.empty()) << FARM_WHEEL_TEST_NVCC;
  Result<ModuleManifest> m = ReadModuleManifest(so, kModule);
  ASSERT_OK(m.status());
  ASSERT_FALSE(m->images.empty());
  // ptxas and nvlink both write it; every cubin of one nvcc run names the same release.
  for (const CodeImage& image : m->images) EXPECT_EQ(image.toolkit, release) << image.name;
}

TEST(ManifestTest, SuffixFallsBackToFatbinFlagsWithoutToolInfo) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  int renamed = 0;
  for (size_t pos = so.find(".note.nv.tkinfo"); pos != std::string::npos;
       pos = so.find(".note.nv.tkinfo", pos + 1)) {
    so[pos + 14] = 'X';  // the cubins no longer have a section of that name
    ++renamed;
  }
  ASSERT_GE(renamed, 8);
  Result<ModuleManifest> m = ReadModuleManifest(so, kModule);
  ASSERT_OK(m.status());
  EXPECT_EQ(m->archs, (std::vector<std::string>{"sm_120a", "sm_121a", "sm_80", "sm_90a"}));
  for (const CodeImage& image : m->images) {
    EXPECT_EQ(image.suffix_source, "fatbin-flags");
    EXPECT_EQ(image.toolkit, "");  // nothing says which toolkit: nothing is assumed
  }
}

TEST(ManifestTest, Built120aRequested121Fails) {
  FARM_LOAD_MODULE_OR_SKIP("sm120a", so);
  ArchManifest plain = ManifestOf(so, "12.1");
  ASSERT_EQ(plain.missing.size(), 1u) << FormatManifest(plain);
  EXPECT_EQ(plain.missing[0].ToString(), "attn_example/_attn_example.so lacks sm_121");
  ArchManifest specific = ManifestOf(so, "12.1a");
  ASSERT_EQ(specific.missing.size(), 1u);
  EXPECT_EQ(specific.missing[0].ToString(), "attn_example/_attn_example.so lacks sm_121a");
  // sm_120a loads on exactly 12.0: not on GB10 (12.1).
  EXPECT_EQ(Versions(specific.runs_on), "12.0");
  EXPECT_TRUE(ManifestOf(so, "12.0a").missing.empty());
  // Asked for 12.0, it holds sm_120a: the message says so and how a recipe asks for it.
  ArchManifest same_cc = ManifestOf(so, "12.0");
  ASSERT_EQ(same_cc.missing.size(), 1u);
  EXPECT_EQ(same_cc.missing[0].instead, "sm_120a");
  EXPECT_EQ(same_cc.missing[0].ToString(),
            "attn_example/_attn_example.so lacks sm_120; it holds sm_120a instead, which runs "
            "on cc 12.0: the package compiles that code for it. Ask for what it builds with "
            "matrix.arch_lists: [\"12.0a\"]; if the package refuses \"12.0a\" in "
            "TORCH_CUDA_ARCH_LIST, give it the list it accepts in the build command "
            "(TORCH_CUDA_ARCH_LIST=12.0 \"$FARM_PYTHON\" -m pip wheel ...; docs/recipes.md)");
}

TEST(ManifestTest, PtxAndFamilyImages) {
  FARM_LOAD_MODULE_OR_SKIP("ptx", so);
  ArchManifest m = ManifestOf(so, "9.0+PTX;10.0f");
  ASSERT_EQ(m.modules.size(), 1u);
  EXPECT_EQ(m.modules[0].archs, (std::vector<std::string>{"compute_90", "sm_100f", "sm_90"}))
      << FormatManifest(m);
  EXPECT_TRUE(m.missing.empty()) << FormatManifest(m);
  int ptx = 0;
  for (const CodeImage& image : m.modules[0].images) {
    if (image.image.kind != arch::Image::Kind::kPtx) continue;
    ++ptx;
    EXPECT_EQ(image.name, "compute_90");
    EXPECT_EQ(image.ptx_version, "9.0");
    EXPECT_EQ(image.compression, Compression::kZstd);  // nvcc 13 compresses PTX by default
  }
  EXPECT_EQ(ptx, 1);
  // PTX for 9.0 JIT-compiles forward; sm_100f covers 10.x.
  EXPECT_EQ(Versions(m.runs_on), "9.0 10.0 10.3 11.0 12.0 12.1");
  EXPECT_EQ(ManifestOf(so, "9.0a").missing.size(), 1u);
}

TEST(ManifestTest, FormatsForPeopleAndForCuobjdumpComparison) {
  FARM_LOAD_MODULE_OR_SKIP("ptx", so);
  ArchManifest m = ManifestOf(so, "9.0+PTX;12.1a");
  std::string text = FormatManifest(m);
  EXPECT_NE(text.find("ptx  compute_90"), std::string::npos) << text;
  EXPECT_NE(text.find("wheel runs on: 9.0, 10.0"), std::string::npos) << text;
  EXPECT_NE(text.find("missing: attn_example/_attn_example.so lacks sm_121a"), std::string::npos)
      << text;
  std::string listing = FormatCuobjdumpStyle(m.modules[0]);
  EXPECT_NE(listing.find("ELF file    1: _attn_example.1.sm_90.cubin\n"), std::string::npos)
      << listing;
  EXPECT_NE(listing.find("ELF file    4: _attn_example.4.sm_100f.cubin\n"), std::string::npos)
      << listing;
  EXPECT_NE(listing.find("PTX file    1: _attn_example.1.sm_90.ptx\n"), std::string::npos)
      << listing;
  // cuobjdump drops only ".so" and what follows it, as seen on CPython extension modules.
  ModuleManifest ext = m.modules[0];
  ext.module = "sageattention/_fused.cpython-312-x86_64-linux-gnu.so";
  EXPECT_NE(FormatCuobjdumpStyle(ext).find(
                "ELF file    1: _fused.cpython-312-x86_64-linux-gnu.1.sm_90.cubin\n"),
            std::string::npos);
  ext.module = "nvidia/cublas/lib/libcublas.so.13";
  EXPECT_NE(FormatCuobjdumpStyle(ext).find("ELF file    1: libcublas.1.sm_90.cubin\n"),
            std::string::npos);
}

class ManifestWheelTest : public ::testing::Test {
 protected:
  WheelReport InspectWithModule(const std::string& so, const std::string& requested) {
    testing::WheelSpec spec;
    spec.files.push_back({kModule, so, testing::ZipEntrySpec::Type::kFile});
    Result<std::string> host = fs::ReadFile(FARM_WHEEL_TEST_HOST_SO);
    EXPECT_TRUE(host.ok()) << host.status().ToString();
    // Named without ".so" on purpose: ELF files are found by magic, not extension.
    spec.files.push_back({"attn_example/libhelper", host.ok() ? *host : ""});
    Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    InspectOptions options;
    options.requested_targets = Targets(requested);
    Result<WheelReport> r = InspectWheel(path.ok() ? *path : "", options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : WheelReport{};
  }
  farm::testing::ScopedTempDir dir_;
};

TEST_F(ManifestWheelTest, WheelWithAllRequestedTargetsPasses) {
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", so);
  WheelReport r = InspectWithModule(so, "8.0;9.0a;12.0a;12.1a");
  EXPECT_TRUE(r.ok()) << (r.problems.empty() ? "" : r.problems[0].ToString());
  ASSERT_EQ(r.manifest.modules.size(), 2u);
  EXPECT_EQ(r.manifest.modules[0].module, kModule);
  EXPECT_EQ(r.manifest.modules[1].module, "attn_example/libhelper");
  EXPECT_FALSE(r.manifest.modules[1].has_device_code());
  EXPECT_EQ(Versions(r.manifest.runs_on), "8.0 8.6 8.7 8.9 9.0 12.0 12.1");
}

TEST_F(ManifestWheelTest, WheelMissingTargetNamesModuleAndArch) {
  FARM_LOAD_MODULE_OR_SKIP("sm120a", so);
  WheelReport r = InspectWithModule(so, "12.0a;12.1a");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].rule, "arch-missing");
  EXPECT_EQ(r.problems[0].entry, kModule);
  EXPECT_EQ(r.problems[0].detail, "attn_example/_attn_example.so lacks sm_121a");
}

TEST_F(ManifestWheelTest, WheelWithoutDeviceCodeMissesEverything) {
  Result<std::string> host = fs::ReadFile(FARM_WHEEL_TEST_HOST_SO);
  ASSERT_OK(host.status());
  WheelReport r = InspectWithModule(*host, "9.0");
  EXPECT_TRUE(HasProblem(r.problems, "arch-missing")) << r.problems.size();
  EXPECT_TRUE(r.manifest.runs_on.empty());
}

}  // namespace
}  // namespace farm::wheel
