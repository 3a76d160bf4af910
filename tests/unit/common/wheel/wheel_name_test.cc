// File name parsing, name/version normalisation and RECORD CSV parsing.
#include "common/wheel/wheel_name.h"

#include <gtest/gtest.h>

#include <utility>

#include "common/wheel/metadata/dist_info.h"
#include "tests/support/test_util.h"

namespace farm::wheel {
namespace {

TEST(WheelNameTest, ParsesLocalLabelBuildTagAndCompressedTags) {
  Result<WheelFilename> w = ParseWheelFilename(
      "dist/flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-1-cp312-cp312-linux_x86_64.whl");
  ASSERT_OK(w.status());
  EXPECT_EQ(w->name, "flash_attn");
  EXPECT_EQ(w->version, "2.8.3+cu12torch2.9cxx11abiTRUE");
  EXPECT_EQ(w->local_label, "cu12torch2.9cxx11abiTRUE");
  EXPECT_EQ(w->build_tag, "1");
  EXPECT_EQ(w->ExpandedTags(), std::vector<std::string>{"cp312-cp312-linux_x86_64"});
  Result<WheelFilename> multi = ParseWheelFilename("six-1.16.0-py2.py3-none-any.whl");
  ASSERT_OK(multi.status());
  EXPECT_EQ(multi->ExpandedTags(), (std::vector<std::string>{"py2-none-any", "py3-none-any"}));
  EXPECT_TRUE(multi->IsPure());
}

TEST(WheelNameTest, RejectsMalformedNames) {
  for (const char* bad :
       {"x-1.0-py3-none-any.zip", "x-1.0-none-any.whl", "x-1.0-b1-py3-none-any.whl",
        "x-1.0+-py3-none-any.whl", "x$-1.0-py3-none-any.whl", "x-1.0-py3..py2-none-any.whl",
        "a-b-c-d-e-f-g.whl"}) {
    EXPECT_FALSE(ParseWheelFilename(bad).ok()) << bad;
  }
}

TEST(WheelNameTest, Normalisation) {
  EXPECT_EQ(NormalizeProjectName("Attn__Example.-x"), "attn-example-x");
  // re.sub(r"[-_.]+", "-", name).lower(): a leading or trailing run stays one '-'.
  EXPECT_EQ(NormalizeProjectName("__Attn._"), "-attn-");
  EXPECT_EQ(NormalizeVersion("2.2.0+CU128_torch-2.8"), "2.2.0+cu128.torch.2.8");
  EXPECT_NE(NormalizeVersion("2.2.0"), NormalizeVersion("2.2.0+cu128"));
  // Only PEP 440's 'v' before the release number goes, so normalising is idempotent
  // (tests/fuzz/names_fuzz found "vv" -> "v" -> "").
  EXPECT_EQ(NormalizeVersion("V2.2.0"), "2.2.0");
  for (const char* odd : {"vv", "v", "vv1", "vendor"}) {
    EXPECT_EQ(NormalizeVersion(odd), odd);
    EXPECT_EQ(NormalizeVersion(NormalizeVersion(odd)), NormalizeVersion(odd));
  }
  EXPECT_EQ(PlatformArch("manylinux_2_28_aarch64"), "aarch64");
  EXPECT_EQ(PlatformArch("manylinux2014_x86_64"), "x86_64");
  EXPECT_EQ(PlatformArch("linux_x86_64"), "x86_64");
  EXPECT_EQ(PlatformArch("win_amd64"), "win_amd64");
}

TEST(RecordCsvTest, QuotedFieldsCrlfAndErrors) {
  Result<std::vector<RecordRow>> rows =
      ParseRecord("a.py,sha256=x,1\r\n\"b,\"\"c\"\"\nd.py\",sha256=y,2\n\nR,,\n");
  ASSERT_OK(rows.status());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].path, "b,\"c\"\nd.py");
  EXPECT_EQ((*rows)[1].line, 2);
  EXPECT_EQ((*rows)[2].path, "R");
  EXPECT_EQ((*rows)[2].line, 5);
  EXPECT_TRUE((*rows)[2].hash.empty());
  EXPECT_FALSE(ParseRecord("a,b\n").ok());
  EXPECT_FALSE(ParseRecord("\"a,b,c\n").ok());
  EXPECT_FALSE(ParseRecord("\"a\"x,b,c\n").ok());
}

TEST(RecordCsvTest, Base64UrlWithoutPadding) {
  constexpr std::pair<const char*, std::string_view> kCases[] = {
      {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"\xfb\xff", "-_8"},
  };
  for (const auto& [bytes, text] : kCases) EXPECT_EQ(Base64UrlNoPad(bytes), text) << bytes;
}

TEST(HeadersTest, ContinuationLinesAndBody) {
  std::vector<HeaderField> f =
      ParseHeaders("Name: x\nSummary: one\n  two\nTag: a\nTag: b\n\nName: body\n");
  EXPECT_EQ(FindHeader(f, "name"), "x");
  EXPECT_EQ(FindHeader(f, "Summary"), "one two");
  EXPECT_EQ(FindHeaders(f, "Tag"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(FindHeaders(f, "Name").size(), 1u);
}

}  // namespace
}  // namespace farm::wheel
