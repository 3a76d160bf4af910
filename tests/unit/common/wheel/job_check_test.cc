#include "common/wheel/job_check.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/elf/fatbin_fixture.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

constexpr const char* kJobModule = "attn_example/_attn_example.so";

farm::v1::MatrixCell JobCell(const std::string& python, const std::string& arch_list) {
  farm::v1::MatrixCell cell;
  cell.set_python(python);
  cell.set_arch_list(arch_list);
  cell.set_platform("linux_x86_64");
  return cell;
}

TEST(CpythonTagTest, MapsVersionsAndRejectsJunk) {
  constexpr std::pair<const char*, std::string_view> kCases[] = {
      {"3.12", "cp312"}, {"3.9.18", "cp39"}, {"", ""}, {"3", ""}, {"3.x", ""}, {".12", ""},
  };
  for (const auto& [version, tag] : kCases) EXPECT_EQ(CpythonTag(version), tag) << version;
}

class JobCheckTest : public ::testing::Test {
 protected:
  std::string Wheel(const std::string& so) {
    testing::WheelSpec spec;
    spec.files.push_back({kJobModule, so, testing::ZipEntrySpec::Type::kFile});
    Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    return path.ok() ? *path : "";
  }
  farm::testing::ScopedTempDir dir_;
};

TEST_F(JobCheckTest, AWheelWithEveryTargetPassesWithItsManifest) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  auto check = CheckJobWheel(Wheel(so), "", JobCell("3.12", "9.0a;12.0a;12.1a"));
  ASSERT_OK(check.status());
  EXPECT_TRUE(check->ok()) << check->Summary();
  EXPECT_TRUE(check->requires_device_code);
  std::set<std::string> sass;
  for (const auto& image : check->manifest.images()) {
    EXPECT_EQ(image.module(), kJobModule);
    if (image.kind() == "sass") sass.insert(image.arch());
  }
  EXPECT_EQ(sass, (std::set<std::string>{"sm_80", "sm_90a", "sm_120a", "sm_121a"}));
  std::vector<std::string> runs_on(check->manifest.runs_on().begin(),
                                   check->manifest.runs_on().end());
  EXPECT_EQ(runs_on, (std::vector<std::string>{"8.0", "8.6", "8.7", "8.9", "9.0", "12.0", "12.1"}));
}

TEST_F(JobCheckTest, AMissingTargetAndAWrongPythonAreProblems) {
  FARM_LOAD_MODULE_OR_SKIP("sm120a", so);
  auto check = CheckJobWheel(Wheel(so), "", JobCell("3.11", "12.0a;12.1a"));
  ASSERT_OK(check.status());
  ASSERT_FALSE(check->ok());
  std::string summary = check->Summary();
  EXPECT_NE(summary.find("arch-missing: attn_example/_attn_example.so: "
                         "attn_example/_attn_example.so lacks sm_121a"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("cp312"), std::string::npos) << summary;  // built for 3.12, not 3.11
  ASSERT_EQ(check->manifest.missing_size(), 1);
  EXPECT_EQ(check->manifest.missing(0), "attn_example/_attn_example.so lacks sm_121a");
}

TEST_F(JobCheckTest, AModuleCompiledWithAnotherCudaThanTheCellsFailsNamingBoth) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  Result<ModuleManifest> module = ReadModuleManifest(so, kJobModule);
  ASSERT_OK(module.status());
  std::string built = module->images.front().toolkit;  // "13.0" here
  ASSERT_FALSE(built.empty());
  farm::v1::MatrixCell cell = JobCell("3.12", "9.0a");
  cell.set_cuda(built);
  auto same = CheckJobWheel(Wheel(so), "", cell);
  ASSERT_OK(same.status());
  EXPECT_FALSE(HasProblem(same->problems, "cuda-mismatch")) << same->Summary();

  cell.set_cuda(built == "12.8" ? "12.9" : "12.8");
  auto other = CheckJobWheel(Wheel(so), "", cell);
  ASSERT_OK(other.status());
  ASSERT_TRUE(HasProblem(other->problems, "cuda-mismatch", kJobModule)) << other->Summary();
  std::string summary = other->Summary();
  EXPECT_NE(summary.find("compiled with CUDA " + built), std::string::npos) << summary;
  EXPECT_NE(summary.find("the cell is CUDA " + cell.cuda()), std::string::npos) << summary;
  // A cell without CUDA asks for no toolkit: nothing to compare.
  cell.set_cuda("");
  auto none = CheckJobWheel(Wheel(so), "", cell);
  ASSERT_OK(none.status());
  EXPECT_FALSE(HasProblem(none->problems, "cuda-mismatch")) << none->Summary();
}

TEST_F(JobCheckTest, TheGivenFileNameIsCheckedInsteadOfTheStoredOne) {
  testing::WheelSpec spec;
  Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
  ASSERT_OK(path.status());
  std::string stored = dir_.path() + "/0123abcd";
  ASSERT_EQ(std::rename(path->c_str(), stored.c_str()), 0);
  auto named = CheckJobWheel(stored, spec.filename, JobCell("3.12", ""));
  ASSERT_OK(named.status());
  EXPECT_TRUE(named->ok()) << named->Summary();
  EXPECT_FALSE(named->requires_device_code);
  auto unnamed = CheckJobWheel(stored, "", JobCell("3.12", ""));
  ASSERT_OK(unnamed.status());
  EXPECT_TRUE(HasProblem(unnamed->problems, "filename-invalid")) << unnamed->Summary();
}

TEST_F(JobCheckTest, ImagesTheArchListDidNotAskForAreListedAndRefusedOnRequest) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);  // sm_80, sm_90a, sm_120a, sm_121a
  std::string wheel = Wheel(so);
  auto check = CheckJobWheel(wheel, "", JobCell("3.12", "9.0a"));
  ASSERT_OK(check.status());
  EXPECT_TRUE(check->ok()) << check->Summary();  // listed, not refused
  std::vector<std::string> extra(check->manifest.unrequested().begin(),
                                 check->manifest.unrequested().end());
  EXPECT_EQ(extra, (std::vector<std::string>{"sm_80", "sm_120a", "sm_121a"}));
  EXPECT_EQ(ArchListIgnoredMessage("9.0a", check->manifest),
            "this package ignored TORCH_CUDA_ARCH_LIST: asked 9.0a, built sm_80, sm_90a, "
            "sm_120a, sm_121a (not asked for: sm_80, sm_120a, sm_121a)");

  InspectOptions refuse;
  refuse.refuse_unrequested = true;
  auto refused = CheckJobWheel(wheel, "", JobCell("3.12", "9.0a"), refuse);
  ASSERT_OK(refused.status());
  ASSERT_FALSE(refused->ok());
  EXPECT_NE(refused->Summary().find("arch-unrequested: attn_example/_attn_example.so: "
                                    "attn_example/_attn_example.so holds sm_80, sm_120a, "
                                    "sm_121a, which the arch list 9.0a does not ask for"),
            std::string::npos)
      << refused->Summary();

  // Everything asked for, nothing more: no warning; and no request means nothing ignored.
  auto exact = CheckJobWheel(wheel, "", JobCell("3.12", "8.0;9.0a;12.0a;12.1a"), refuse);
  ASSERT_OK(exact.status());
  EXPECT_TRUE(exact->ok()) << exact->Summary();
  EXPECT_EQ(ArchListIgnoredMessage("8.0;9.0a;12.0a;12.1a", exact->manifest), "");
  auto unasked = CheckJobWheel(wheel, "", JobCell("3.12", ""), refuse);
  ASSERT_OK(unasked.status());
  EXPECT_EQ(unasked->manifest.unrequested_size(), 0);
}

TEST(ArchListIgnoredMessageTest, LongListsAreShortenedInTheMiddle) {
  farm::v1::ArchManifest m;
  for (const char* arch : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_103",
                           "sm_110", "sm_120", "sm_121", "compute_121"}) {
    m.add_images()->set_arch(arch);
    if (std::string(arch) != "sm_90") m.add_unrequested(arch);
  }
  EXPECT_EQ(ArchListIgnoredMessage("9.0", m),
            "this package ignored TORCH_CUDA_ARCH_LIST: asked 9.0, built sm_75, sm_80, sm_86, "
            "..., sm_120, sm_121, compute_121 (not asked for: sm_75, sm_80, sm_86, ..., sm_120, "
            "sm_121, compute_121)");
}

TEST_F(JobCheckTest, ABadArchListOrANonZipFails) {
  testing::WheelSpec spec;
  Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
  ASSERT_OK(path.status());
  EXPECT_FALSE(CheckJobWheel(*path, "", JobCell("3.12", "9.9z")).ok());
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/x-1.0-py3-none-any.whl", "not a zip"));
  EXPECT_FALSE(
      CheckJobWheel(dir_.path() + "/x-1.0-py3-none-any.whl", "", JobCell("3.12", "")).ok());
}

}  // namespace
}  // namespace farm::wheel
