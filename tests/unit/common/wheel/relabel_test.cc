#include "common/wheel/relabel.h"

#include <filesystem>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/inspect.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

using testing::WheelSpec;
using testing::WriteWheel;

WheelSpec Unlabelled() {
  WheelSpec spec;
  spec.filename = "attn_example-1.0.0-cp312-cp312-linux_x86_64.whl";
  spec.dist_info = "attn_example-1.0.0.dist-info";
  spec.metadata =
      "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0\n"
      "Requires-Python: >=3.9\n\nVersion: 9.9 in the body stays.\n";
  spec.files.push_back({"attn_example-1.0.0.data/scripts/run,me.sh", "#!/bin/sh\necho hi\n"});
  return spec;
}

TEST(RenderLocalLabelTest, FillsCellVariablesAndNormalises) {
  auto vars = CellLabelVars("3.11", "2.8", "13.0", "linux_x86_64");
  EXPECT_EQ(RenderLocalLabel("cu{cuda_nodot}torch{torch}", vars).value(), "cu130torch2.8");
  EXPECT_EQ(RenderLocalLabel("CU{cuda_major}-py{python_nodot}", vars).value(), "cu13.py311");
  EXPECT_EQ(RenderLocalLabel("", vars).value(), "");
  EXPECT_EQ(RenderLocalLabel("cu{cuda", vars).status().code(), StatusCode::kInvalidArgument);
  Status unknown = RenderLocalLabel("cu{gpu}", vars).status();
  EXPECT_NE(unknown.message().find("unknown placeholder {gpu}"), std::string::npos);
  // torch is empty for packages without torch: "torch{torch}" would end in a letter, fine,
  // but a template that leaves a trailing dot is refused.
  auto no_torch = CellLabelVars("3.11", "", "13.0", "linux_x86_64");
  EXPECT_EQ(RenderLocalLabel("cu{cuda_nodot}.{torch}", no_torch).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(IsValidLocalLabel("a..b"));
  EXPECT_FALSE(IsValidLocalLabel("Cu130"));
  EXPECT_TRUE(IsValidLocalLabel("cu130torch2.8"));
  EXPECT_EQ(WithLocalLabel("2.2.0+cu128", "cu130"), "2.2.0+cu130");
  EXPECT_EQ(WithLocalLabel("2.2.0+cu128", ""), "2.2.0");
}

TEST(RelabelWheelTest, RewritesMetadataRecordDirectoriesAndNameAndPassesInspection) {
  farm::testing::ScopedTempDir dir;
  auto in = WriteWheel(dir.path(), Unlabelled());
  ASSERT_OK(in.status());
  std::string out_dir = dir.path() + "/out";
  ASSERT_OK(fs::MakeDirs(out_dir));
  auto result = RelabelWheel(*in, "cu130torch2.8", out_dir);
  ASSERT_OK(result.status());
  EXPECT_TRUE(result->rewritten);
  EXPECT_EQ(result->filename, "attn_example-1.0.0+cu130torch2.8-cp312-cp312-linux_x86_64.whl");
  EXPECT_EQ(result->path, out_dir + "/" + result->filename);
  EXPECT_EQ(result->version, "1.0.0+cu130torch2.8");

  auto report = InspectWheel(result->path, {});
  ASSERT_OK(report.status());
  for (const auto& p : report->problems) ADD_FAILURE() << p.ToString();
  EXPECT_EQ(report->metadata_version, "1.0.0+cu130torch2.8");
  EXPECT_EQ(report->dist_info, "attn_example-1.0.0+cu130torch2.8.dist-info");
  std::vector<std::string> names;
  for (const auto& f : report->files) names.push_back(f.name);
  EXPECT_NE(std::find(names.begin(), names.end(),
                      "attn_example-1.0.0+cu130torch2.8.data/scripts/run,me.sh"),
            names.end());
  // Every other file keeps its bytes.
  auto original = InspectWheel(*in, {});
  ASSERT_OK(original.status());
  EXPECT_EQ(original->files[0].sha256, report->files[0].sha256);
  EXPECT_EQ(original->files.size(), report->files.size());
}

TEST(RelabelWheelTest, IsDeterministicSoARepeatAfterACrashGivesTheSameDigest) {
  farm::testing::ScopedTempDir dir;
  auto in = WriteWheel(dir.path(), Unlabelled());
  ASSERT_OK(in.status());
  ASSERT_OK(fs::MakeDirs(dir.path() + "/a"));
  ASSERT_OK(fs::MakeDirs(dir.path() + "/b"));
  auto a = RelabelWheel(*in, "cu130", dir.path() + "/a");
  auto b = RelabelWheel(*in, "cu130", dir.path() + "/b");
  ASSERT_OK(a.status());
  ASSERT_OK(b.status());
  EXPECT_EQ(Sha256FileHex(a->path).value(), Sha256FileHex(b->path).value());
}

TEST(RelabelWheelTest, LeavesAWheelAloneWhenThePackageAppliedTheLabelItself) {
  farm::testing::ScopedTempDir dir;
  auto in = WriteWheel(dir.path(), WheelSpec{});  // 1.0.0+cu130 everywhere
  ASSERT_OK(in.status());
  auto same = RelabelWheel(*in, "cu130", dir.path());
  ASSERT_OK(same.status());
  EXPECT_FALSE(same->rewritten);
  EXPECT_EQ(same->path, *in);
  // A different label replaces the package's own.
  auto other = RelabelWheel(*in, "cu128", dir.path());
  ASSERT_OK(other.status());
  EXPECT_TRUE(other->rewritten);
  EXPECT_EQ(other->filename, "attn_example-1.0.0+cu128-cp312-cp312-linux_x86_64.whl");
  auto report = InspectWheel(other->path, {});
  ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok()) << (report->problems.empty() ? "" : report->problems[0].ToString());
}

TEST(RelabelWheelTest, RefusesBadLabelsAndWheelsWithoutDistInfo) {
  farm::testing::ScopedTempDir dir;
  auto in = WriteWheel(dir.path(), Unlabelled());
  ASSERT_OK(in.status());
  EXPECT_EQ(RelabelWheel(*in, "cu 130", dir.path()).status().code(), StatusCode::kInvalidArgument);
  std::string bare = dir.path() + "/bare-1.0-py3-none-any.whl";
  ASSERT_OK(testing::WriteZip(bare, {{"bare/__init__.py", ""}}));
  EXPECT_EQ(RelabelWheel(bare, "cu130", dir.path()).status().code(), StatusCode::kInvalidArgument);
  // A RECORD naming a path outside the wheel is the build's attack, not a row to rename.
  WheelSpec hostile = Unlabelled();
  hostile.edit_record = [](std::string* record) { *record += "../../../etc/profile.d/x.sh,,\n"; };
  ASSERT_OK(fs::MakeDirs(dir.path() + "/h"));
  auto bad = WriteWheel(dir.path() + "/h", hostile);
  ASSERT_OK(bad.status());
  Status refused = RelabelWheel(*bad, "cu130", dir.path() + "/h").status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("outside the wheel"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace farm::wheel

namespace farm::wheel {
namespace {

TEST(MakeVariantWheelTest, DropsTheLocalLabelAddsVariantJsonAndNamesTheVariant) {
  farm::testing::ScopedTempDir dir;
  WheelSpec spec = Unlabelled();
  spec.filename = "attn_example-1.0.0+cu130.sm90-cp312-cp312-linux_x86_64.whl";
  spec.dist_info = "attn_example-1.0.0+cu130.sm90.dist-info";
  spec.metadata = "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0+cu130.sm90\n";
  spec.files.clear();
  spec.files.push_back({"attn_example/__init__.py", "x = 1\n"});
  auto in = WriteWheel(dir.path(), spec);
  ASSERT_OK(in.status());
  const std::string json = R"({"variants": {"sm90": {"nvidia": {"sm_arch": ["90_real"]}}}})";
  auto made = MakeVariantWheel(*in, "sm90", json, dir.path());
  ASSERT_OK(made.status());
  EXPECT_EQ(made->filename, "attn_example-1.0.0-cp312-cp312-linux_x86_64-sm90.whl");
  EXPECT_EQ(made->version, "1.0.0");
  // The pip-compatible name of the same bytes passes every check, RECORD included.
  InspectOptions options;
  options.filename = "attn_example-1.0.0-cp312-cp312-linux_x86_64.whl";
  auto report = InspectWheel(made->path, options);
  ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok()) << testing::AllProblems(*report);
  EXPECT_EQ(report->metadata_version, "1.0.0");
  bool found = false;
  for (const auto& f : report->files) {
    if (f.name == "attn_example-1.0.0.dist-info/variant.json") {
      found = true;
      EXPECT_EQ(f.sha256, Sha256Hex(json));
    }
  }
  EXPECT_TRUE(found);
  // Deterministic: made again, the same bytes.
  ASSERT_OK(fs::MakeDirs(dir.path() + "/again"));
  auto again = MakeVariantWheel(*in, "sm90", json, dir.path() + "/again");
  ASSERT_OK(again.status());
  EXPECT_EQ(Sha256FileHex(again->path).value(), Sha256FileHex(made->path).value());
  for (const char* bad : {"", "Sm90", "a-b", "seventeen_chars_x"}) {
    EXPECT_EQ(MakeVariantWheel(*in, bad, json, dir.path()).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace farm::wheel
