// InspectWheel on wheels written at test time: a valid one, then one broken rule at a time.
#include "common/wheel/inspect.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

using testing::AllProblems;
using testing::RecordHash;
using testing::WheelSpec;
using testing::ZipEntrySpec;

constexpr char kDist[] = "attn_example-1.0.0+cu130.dist-info";

void Replace(std::string* s, const std::string& from, const std::string& to) {
  size_t pos = s->find(from);
  ASSERT_NE(pos, std::string::npos) << from << " not in " << *s;
  s->replace(pos, from.size(), to);
}

class InspectTest : public ::testing::Test {
 protected:
  WheelReport Inspect(const WheelSpec& spec, const InspectOptions& options = {}) {
    Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    if (!path.ok()) return {};
    Result<WheelReport> report = InspectWheel(*path, options);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? std::move(report).value() : WheelReport{};
  }

  // Asserts that the report has exactly one problem, with this rule and entry.
  void ExpectOnly(const WheelReport& r, const std::string& rule, const std::string& entry) {
    ASSERT_EQ(r.problems.size(), 1u) << AllProblems(r);
    EXPECT_EQ(r.problems[0].rule, rule) << AllProblems(r);
    EXPECT_EQ(r.problems[0].entry, entry) << AllProblems(r);
  }

  farm::testing::ScopedTempDir dir_;
};

TEST_F(InspectTest, GoodWheelPassesAndListsEverything) {
  WheelSpec spec;
  InspectOptions options;
  options.expected_python_tag = "cp312";
  options.expected_platform = "linux_x86_64";
  WheelReport r = Inspect(spec, options);
  EXPECT_TRUE(r.ok()) << AllProblems(r);
  EXPECT_EQ(r.tags.name, "attn_example");
  EXPECT_EQ(r.tags.version, "1.0.0+cu130");
  EXPECT_EQ(r.tags.local_label, "cu130");
  EXPECT_EQ(r.tags.python_tag, "cp312");
  EXPECT_EQ(r.tags.platform_tag, "linux_x86_64");
  EXPECT_EQ(r.metadata_name, "attn-example");
  EXPECT_EQ(r.metadata_version, "1.0.0+cu130");
  EXPECT_EQ(r.dist_info, kDist);
  EXPECT_EQ(r.wheel_tags, std::vector<std::string>{"cp312-cp312-linux_x86_64"});
  ASSERT_EQ(r.files.size(), 5u);
  EXPECT_EQ(r.files[0].name, "attn_example/__init__.py");
  EXPECT_EQ(r.files[0].size, 24);
  // sha256 of "from ._version import v\n" as hex; RecordHash of the same bytes must agree.
  EXPECT_EQ(r.files[0].sha256.size(), 64u);
  EXPECT_TRUE(r.manifest.modules.empty());
}

TEST_F(InspectTest, QuotedRecordRowsAndBuildTagAreAccepted) {
  WheelSpec spec;
  spec.filename = "attn_example-1.0.0+cu130-7b-cp312-cp312-linux_x86_64.whl";
  spec.wheel += "Build: 7b\n";
  spec.files.push_back({"attn_example/data/a,b \"q\".txt", "x"});
  spec.files.push_back(
      {"attn_example/data/\xc3\xbc"
       "ber.txt",
       "utf-8 name"});
  WheelReport r = Inspect(spec);
  EXPECT_TRUE(r.ok()) << AllProblems(r);
  EXPECT_EQ(r.tags.build_tag, "7b");
}

TEST_F(InspectTest, RecordWrongHash) {
  WheelSpec spec;
  spec.edit_record = [](std::string* rec) {
    Replace(rec, RecordHash("v = '1.0.0'\n"), RecordHash("v = '2.0.0'\n"));
  };
  ExpectOnly(Inspect(spec), "record-hash-mismatch", "attn_example/_version.py");
}

TEST_F(InspectTest, RecordWrongSize) {
  WheelSpec spec;
  spec.edit_record = [](std::string* rec) {
    Replace(rec, RecordHash("v = '1.0.0'\n") + ",12", RecordHash("v = '1.0.0'\n") + ",13");
  };
  ExpectOnly(Inspect(spec), "record-size-mismatch", "attn_example/_version.py");
}

TEST_F(InspectTest, RecordPaddedOrWeakHash) {
  WheelSpec padded;
  padded.edit_record = [](std::string* rec) {
    std::string h = RecordHash("v = '1.0.0'\n");
    Replace(rec, h, h + "=");
  };
  ExpectOnly(Inspect(padded), "record-hash-format", "attn_example/_version.py");
  WheelSpec md5;
  md5.edit_record = [](std::string* rec) { Replace(rec, RecordHash("v = '1.0.0'\n"), "md5=abc"); };
  ExpectOnly(Inspect(md5), "record-hash-algorithm", "attn_example/_version.py");
}

TEST_F(InspectTest, RecordListsMissingFile) {
  WheelSpec spec;
  spec.edit_record = [](std::string* rec) {
    *rec = testing::RecordRow("attn_example/gone.py", "x") + "\n" + *rec;
  };
  ExpectOnly(Inspect(spec), "record-missing-file", "attn_example/gone.py");
}

TEST_F(InspectTest, FileNotInRecord) {
  WheelSpec spec;
  spec.unlisted.push_back({"attn_example/extra.py", "print('hi')\n"});
  ExpectOnly(Inspect(spec), "record-unlisted-file", "attn_example/extra.py");
}

TEST_F(InspectTest, RecordSignaturesAreTolerated) {
  WheelSpec spec;
  spec.unlisted.push_back({std::string(kDist) + "/RECORD.jws", "{}"});
  spec.unlisted.push_back({std::string(kDist) + "/RECORD.p7s", "sig"});
  WheelReport r = Inspect(spec);
  EXPECT_TRUE(r.ok()) << AllProblems(r);
}

TEST_F(InspectTest, RecordSelfRowWithHashAndBadCsv) {
  WheelSpec self;
  self.edit_record = [](std::string* rec) {
    Replace(rec, std::string(kDist) + "/RECORD,,", std::string(kDist) + "/RECORD,sha256=x,1");
  };
  ExpectOnly(Inspect(self), "record-self-row", std::string(kDist) + "/RECORD");
  WheelSpec csv;
  csv.edit_record = [](std::string* rec) { *rec += "\"unterminated,x,1\n"; };
  ExpectOnly(Inspect(csv), "record-parse", std::string(kDist) + "/RECORD");
}

TEST_F(InspectTest, MissingDistInfoFile) {
  // A wheel without its WHEEL file, RECORD otherwise consistent.
  WheelSpec spec;
  std::vector<ZipEntrySpec> entries = spec.files;
  entries.push_back({std::string(kDist) + "/METADATA", spec.metadata});
  std::string record;
  for (const auto& e : entries) record += testing::RecordRow(e.name, e.content) + "\n";
  record += std::string(kDist) + "/RECORD,,\n";
  entries.push_back({std::string(kDist) + "/RECORD", record});
  std::string path = dir_.path() + "/" + spec.filename;
  ASSERT_OK(testing::WriteZip(path, entries));
  Result<WheelReport> r = InspectWheel(path, {});
  ASSERT_OK(r.status());
  ExpectOnly(*r, "dist-info-missing-file", std::string(kDist) + "/WHEEL");
}

TEST_F(InspectTest, FileNameTagsDisagreeWithWheelFile) {
  WheelSpec spec;
  spec.filename = "attn_example-1.0.0+cu130-cp311-cp311-linux_x86_64.whl";
  ExpectOnly(Inspect(spec), "wheel-tag-mismatch", std::string(kDist) + "/WHEEL");
}

TEST_F(InspectTest, DotCompressedTagsExpand) {
  WheelSpec spec;
  spec.filename = "attn_example-1.0.0+cu130-cp311.cp312-abi3-linux_x86_64.whl";
  spec.wheel =
      "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-abi3-linux_x86_64\n"
      "Tag: cp311-abi3-linux_x86_64\n";
  InspectOptions options;
  options.expected_python_tag = "cp313";  // abi3 from 3.11 serves 3.13
  WheelReport r = Inspect(spec, options);
  EXPECT_TRUE(r.ok()) << AllProblems(r);
  spec.wheel = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-abi3-linux_x86_64\n";
  ExpectOnly(Inspect(spec), "wheel-tag-mismatch", std::string(kDist) + "/WHEEL");
}

TEST_F(InspectTest, PurelibTrueForPlatformWheel) {
  WheelSpec spec;
  Replace(&spec.wheel, "Root-Is-Purelib: false", "Root-Is-Purelib: true");
  ExpectOnly(Inspect(spec), "wheel-purelib", std::string(kDist) + "/WHEEL");
}

TEST_F(InspectTest, UnknownWheelVersionAndBuildTagMismatch) {
  WheelSpec version;
  Replace(&version.wheel, "Wheel-Version: 1.0", "Wheel-Version: 2.0");
  ExpectOnly(Inspect(version), "wheel-version", std::string(kDist) + "/WHEEL");
  WheelSpec build;
  build.wheel += "Build: 3\n";
  ExpectOnly(Inspect(build), "wheel-build-tag", std::string(kDist) + "/WHEEL");
}

TEST_F(InspectTest, ExpectedPlatformAndPythonMismatch) {
  WheelSpec spec;
  InspectOptions arm;
  arm.expected_platform = "linux_aarch64";
  ExpectOnly(Inspect(spec, arm), "tag-platform-mismatch", "");
  // A manylinux environment needs a manylinux tag that promises no newer glibc.
  InspectOptions manylinux;
  manylinux.expected_platform = "manylinux_2_28_x86_64";
  ExpectOnly(Inspect(spec, manylinux), "tag-manylinux-mismatch", "");
  WheelSpec tagged;
  Replace(&tagged.filename, "linux_x86_64", "manylinux_2_17_x86_64");
  Replace(&tagged.wheel, "linux_x86_64", "manylinux_2_17_x86_64");
  EXPECT_TRUE(Inspect(tagged, manylinux).ok());
  InspectOptions py;
  py.expected_python_tag = "cp311";
  ExpectOnly(Inspect(spec, py), "tag-python-mismatch", "");
}

TEST_F(InspectTest, MetadataNameMismatch) {
  WheelSpec spec;
  Replace(&spec.metadata, "Name: attn-example", "Name: attn-sample");
  ExpectOnly(Inspect(spec), "metadata-name-mismatch", std::string(kDist) + "/METADATA");
  WheelSpec normalized;  // PEP 503: case and runs of -_. do not matter
  Replace(&normalized.metadata, "Name: attn-example", "Name: Attn__Example");
  EXPECT_TRUE(Inspect(normalized).ok());
}

TEST_F(InspectTest, MetadataVersionMismatchIncludingLocalLabel) {
  WheelSpec no_label;
  Replace(&no_label.metadata, "Version: 1.0.0+cu130", "Version: 1.0.0");
  ExpectOnly(Inspect(no_label), "metadata-version-mismatch", std::string(kDist) + "/METADATA");
  WheelSpec other_label;
  Replace(&other_label.metadata, "Version: 1.0.0+cu130", "Version: 1.0.0+cu129");
  ExpectOnly(Inspect(other_label), "metadata-version-mismatch", std::string(kDist) + "/METADATA");
  WheelSpec upper;  // local labels compare case-insensitively (PEP 440)
  Replace(&upper.metadata, "Version: 1.0.0+cu130", "Version: 1.0.0+CU130");
  EXPECT_TRUE(Inspect(upper).ok());
}

TEST_F(InspectTest, InvalidFileNameIsReported) {
  WheelSpec spec;
  spec.filename = "attn_example-1.0.0.whl";
  WheelReport r = Inspect(spec);
  EXPECT_FALSE(r.filename_ok);
  EXPECT_TRUE(HasProblem(r.problems, "filename-invalid")) << AllProblems(r);
}

TEST_F(InspectTest, NotAZipIsAnError) {
  std::string path = dir_.path() + "/x-1.0-py3-none-any.whl";
  ASSERT_OK(testing::WriteZip(path, {}));
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fputs("this is not a zip archive at all", f);
  fclose(f);
  Result<WheelReport> r = InspectWheel(path, {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_EQ(InspectWheel(dir_.path() + "/absent.whl", {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace farm::wheel
