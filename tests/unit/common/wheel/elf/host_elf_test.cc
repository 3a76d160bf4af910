// The platform checks of a wheel's host ELF files, on real objects compiled at build time
// for x86_64 and (with Debian's cross compiler) aarch64: the CPU read from the ELF header
// against the platform tag, and the glibc a manylinux tag promises against the symbol
// versions the objects need.
#include "common/wheel/elf/host_elf.h"

#include <gtest/gtest.h>

#include "common/fs.h"
#include "common/wheel/elf/elf_reader.h"
#include "common/wheel/job_check.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

constexpr const char* kProbeModule = "glibc_probe/_probe.so";

// The object compiled for `cpu` ("x86_64", "aarch64") needing an "old" or "new" glibc; a
// test without it skips, saying why.
#define FARM_LOAD_OBJECT_OR_SKIP(cpu, need, var)                                              \
  std::string var;                                                                            \
  do {                                                                                        \
    std::string path_ =                                                                       \
        std::string(FARM_WHEEL_TEST_GLIBC_DIR) + "/" + (cpu) + "_" + (need) + "_glibc.so";    \
    Result<std::string> bytes_ = fs::ReadFile(path_);                                         \
    if (!bytes_.ok()) {                                                                       \
      if (std::string(cpu) == "aarch64" && std::string(FARM_WHEEL_TEST_AARCH64_CC).empty()) { \
        GTEST_SKIP() << "no aarch64 cross compiler was found at configure time, so no "       \
                        "aarch64 object exists (apt-get install crossbuild-essential-arm64)"; \
      }                                                                                       \
      FAIL() << "the build did not make " << path_ << ": " << bytes_.status().ToString();     \
    }                                                                                         \
    var = std::move(bytes_).value();                                                          \
  } while (0)

farm::v1::MatrixCell PlatformCell(const std::string& platform) {
  farm::v1::MatrixCell cell;
  cell.set_python("3.12");
  cell.set_platform(platform);
  return cell;
}

class HostElfTest : public ::testing::Test {
 protected:
  // A wheel tagged `platform_tag` holding `so` as its extension module.
  std::string Wheel(const std::string& platform_tag, const std::string& so) {
    testing::WheelSpec spec;
    spec.filename = "glibc_probe-1.0-cp312-cp312-" + platform_tag + ".whl";
    spec.dist_info = "glibc_probe-1.0.dist-info";
    spec.metadata = "Metadata-Version: 2.1\nName: glibc-probe\nVersion: 1.0\n";
    spec.wheel =
        "Wheel-Version: 1.0\nGenerator: farm-test 1.0\nRoot-Is-Purelib: false\n"
        "Tag: cp312-cp312-" +
        platform_tag + "\n";
    spec.files = {{"glibc_probe/__init__.py", "from ._probe import *\n"}, {kProbeModule, so}};
    Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    return path.ok() ? *path : "";
  }

  // The problems of the wheel checked for a cell of `cell_platform`.
  std::vector<Problem> Check(const std::string& platform_tag, const std::string& so,
                             const std::string& cell_platform) {
    Result<JobWheelCheck> check =
        CheckJobWheel(Wheel(platform_tag, so), "", PlatformCell(cell_platform));
    EXPECT_TRUE(check.ok()) << check.status().ToString();
    return check.ok() ? check->problems : std::vector<Problem>{};
  }

  farm::testing::ScopedTempDir dir_;
};

std::string Summary(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) out += p.ToString() + "\n";
  return out;
}

TEST(HostElfNamesTest, MachinesAndManylinuxTags) {
  EXPECT_EQ(ElfMachineArch(kElfMachineX86_64), "x86_64");
  EXPECT_EQ(ElfMachineArch(kElfMachineAarch64), "aarch64");
  EXPECT_EQ(ElfMachineArch(kElfMachineCuda), "cuda");
  EXPECT_EQ(ElfMachineArch(4242), "ELF machine 4242");
  EXPECT_EQ(ManylinuxGlibc("manylinux_2_28_aarch64"), (GlibcVersion{2, 28}));
  EXPECT_EQ(ManylinuxGlibc("manylinux_2_34_x86_64"), (GlibcVersion{2, 34}));
  EXPECT_EQ(ManylinuxGlibc("manylinux2014_aarch64"), (GlibcVersion{2, 17}));
  EXPECT_EQ(ManylinuxGlibc("manylinux2010_x86_64"), (GlibcVersion{2, 12}));
  EXPECT_EQ(ManylinuxGlibc("manylinux1_x86_64"), (GlibcVersion{2, 5}));
  for (const char* other : {"linux_aarch64", "musllinux_1_2_x86_64", "any", "manylinux_2",
                            "manylinux_2_x86_64", "manylinux_x_28_x86_64", ""}) {
    EXPECT_FALSE(ManylinuxGlibc(other).has_value()) << other;
  }
}

TEST_F(HostElfTest, ReadsTheCpuAndTheNewestGlibcOfRealObjects) {
  FARM_LOAD_OBJECT_OR_SKIP("x86_64", "old", x86_old);
  FARM_LOAD_OBJECT_OR_SKIP("x86_64", "new", x86_new);
  FARM_LOAD_OBJECT_OR_SKIP("aarch64", "old", arm_old);
  FARM_LOAD_OBJECT_OR_SKIP("aarch64", "new", arm_new);
  struct Want {
    const std::string* bytes;
    std::string arch;
    GlibcVersion glibc;
  };
  for (const Want& w : {Want{&x86_old, "x86_64", {2, 2}}, Want{&x86_new, "x86_64", {2, 34}},
                        Want{&arm_old, "aarch64", {2, 17}}, Want{&arm_new, "aarch64", {2, 34}}}) {
    Result<HostElf> elf = ReadHostElf(*w.bytes, kProbeModule);
    ASSERT_OK(elf.status());
    EXPECT_EQ(elf->arch, w.arch);
    EXPECT_EQ(elf->newest_glibc, w.glibc) << w.arch << " " << elf->newest_glibc.ToString();
    if (w.glibc == GlibcVersion{2, 34}) {
      EXPECT_EQ(elf->newest_glibc_symbol, "pthread_create");
    }
  }
}

TEST_F(HostElfTest, AnX86_64ObjectInAnAarch64WheelIsRefused) {
  FARM_LOAD_OBJECT_OR_SKIP("x86_64", "old", x86);
  FARM_LOAD_OBJECT_OR_SKIP("aarch64", "old", arm);
  EXPECT_EQ(Summary(Check("linux_aarch64", arm, "linux_aarch64")), "");
  EXPECT_EQ(Summary(Check("linux_x86_64", x86, "linux_x86_64")), "");
  // The tag is right for the cell, the object is not: only the ELF header tells.
  std::vector<Problem> wrong_object = Check("linux_aarch64", x86, "linux_aarch64");
  ASSERT_EQ(wrong_object.size(), 1u) << Summary(wrong_object);
  EXPECT_EQ(wrong_object[0].ToString(),
            "elf-machine-mismatch: glibc_probe/_probe.so: built for x86_64; the wheel is "
            "tagged linux_aarch64");
  std::vector<Problem> reverse = Check("linux_x86_64", arm, "linux_x86_64");
  EXPECT_TRUE(HasProblem(reverse, "elf-machine-mismatch", kProbeModule)) << Summary(reverse);
  // An aarch64 wheel handed in for an x86_64 cell fails on its tag (and its object is not
  // blamed: it matches the tag it carries).
  std::vector<Problem> wrong_cell = Check("linux_aarch64", arm, "linux_x86_64");
  EXPECT_TRUE(HasProblem(wrong_cell, "tag-platform-mismatch")) << Summary(wrong_cell);
  EXPECT_FALSE(HasProblem(wrong_cell, "elf-machine-mismatch")) << Summary(wrong_cell);
  // A cell without a platform is an x86_64 cell.
  EXPECT_TRUE(HasProblem(Check("linux_aarch64", arm, ""), "tag-platform-mismatch"));
  EXPECT_EQ(Summary(Check("linux_x86_64", x86, "")), "");
}

TEST_F(HostElfTest, AManylinuxTagMustNotPromiseAnOlderGlibcThanTheObjectsNeed) {
  FARM_LOAD_OBJECT_OR_SKIP("aarch64", "old", arm_old);
  FARM_LOAD_OBJECT_OR_SKIP("aarch64", "new", arm_new);
  FARM_LOAD_OBJECT_OR_SKIP("x86_64", "new", x86_new);
  EXPECT_EQ(Summary(Check("manylinux2014_aarch64", arm_old, "linux_aarch64")), "");
  EXPECT_EQ(Summary(Check("manylinux_2_34_aarch64", arm_new, "linux_aarch64")), "");
  std::vector<Problem> too_new = Check("manylinux_2_28_aarch64", arm_new, "linux_aarch64");
  ASSERT_EQ(too_new.size(), 1u) << Summary(too_new);
  EXPECT_EQ(too_new[0].ToString(),
            "manylinux-glibc: glibc_probe/_probe.so: needs GLIBC_2.34 (pthread_create); "
            "manylinux_2_28_aarch64 promises glibc 2.28");
  EXPECT_TRUE(HasProblem(Check("manylinux2014_x86_64", x86_new, "linux_x86_64"), "manylinux-glibc",
                         kProbeModule));
  // A linux_ tag promises nothing about glibc.
  EXPECT_EQ(Summary(Check("linux_aarch64", arm_new, "linux_aarch64")), "");
}

TEST_F(HostElfTest, ACellThatAsksForManylinuxNeedsAManylinuxTagNoNewerThanAsked) {
  FARM_LOAD_OBJECT_OR_SKIP("x86_64", "old", x86_old);
  FARM_LOAD_OBJECT_OR_SKIP("x86_64", "new", x86_new);
  const std::string cell = "manylinux_2_28_x86_64";
  EXPECT_EQ(Summary(Check("manylinux_2_28_x86_64", x86_old, cell)), "");
  EXPECT_EQ(Summary(Check("manylinux2014_x86_64", x86_old, cell)), "");  // 2.17 <= 2.28
  std::vector<Problem> untagged = Check("linux_x86_64", x86_old, cell);
  ASSERT_EQ(untagged.size(), 1u) << Summary(untagged);
  EXPECT_EQ(untagged[0].rule, "tag-manylinux-mismatch");
  EXPECT_NE(untagged[0].detail.find("the cell asks for manylinux_2_28_x86_64 but the wheel is "
                                    "tagged linux_x86_64"),
            std::string::npos)
      << untagged[0].detail;
  EXPECT_TRUE(HasProblem(Check("manylinux_2_34_x86_64", x86_old, cell), "tag-manylinux-mismatch"));
  // Tagged as asked, but the object needs 2.34: the tag is a false promise.
  std::vector<Problem> lying = Check("manylinux_2_28_x86_64", x86_new, cell);
  EXPECT_TRUE(HasProblem(lying, "manylinux-glibc", kProbeModule)) << Summary(lying);
  EXPECT_FALSE(HasProblem(lying, "tag-manylinux-mismatch")) << Summary(lying);
}

// Offset of the .gnu.version_r section of `elf`.
uint64_t VerneedOffset(const std::string& bytes) {
  Result<ElfFile> elf = ElfFile::Parse(bytes);
  if (!elf.ok()) return 0;
  const ElfSection* s = elf->Find(".gnu.version_r");
  return s == nullptr ? 0 : s->offset;
}

TEST_F(HostElfTest, ABrokenVersionTableIsAnErrorNeverARead) {
  FARM_LOAD_OBJECT_OR_SKIP("aarch64", "new", arm);
  uint64_t at = VerneedOffset(arm);
  ASSERT_GT(at, 0u);
  std::string far_aux = arm;
  far_aux[at + 8] = '\xff';  // vn_aux points far past the section
  far_aux[at + 9] = '\xff';
  Result<HostElf> broken = ReadHostElf(far_aux, kProbeModule);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(kProbeModule), std::string::npos);
  // Every byte of the table flipped in turn: an answer or an error, never a crash (ASan
  // builds check the reads).
  Result<ElfFile> elf = ElfFile::Parse(arm);
  ASSERT_OK(elf.status());
  const ElfSection* table = elf->Find(".gnu.version_r");
  ASSERT_NE(table, nullptr);
  for (uint64_t i = 0; i < table->size; ++i) {
    std::string flipped = arm;
    flipped[table->offset + i] = static_cast<char>(~flipped[table->offset + i]);
    (void)ReadHostElf(flipped, kProbeModule);
  }
  // And the wheel check names it.
  std::vector<Problem> problems = Check("linux_aarch64", far_aux, "linux_aarch64");
  EXPECT_TRUE(HasProblem(problems, "elf-unreadable", kProbeModule)) << Summary(problems);
}

}  // namespace
}  // namespace farm::wheel
