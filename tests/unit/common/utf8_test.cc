#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace farm {
namespace {

constexpr char kFffd[] = "\xEF\xBF\xBD";

TEST(Utf8Test, WellFormedTextIsKeptAsIs) {
  for (std::string s : {std::string(), std::string("plain ascii\n"), std::string("café"),
                        std::string("注意力"), std::string("🚀 rocket"),
                        std::string("\xEF\xBF\xBF"),      // U+FFFF
                        std::string("\xF4\x8F\xBF\xBF"),  // U+10FFFF, the last one
                        std::string("nul \0 inside", 12)}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(ToValidUtf8(s), s);
  }
}

TEST(Utf8Test, EveryMalformedByteBecomesOneReplacement) {
  struct Case {
    std::string in, out, why;
  };
  const std::string r = kFffd;
  const Case cases[] = {
      {"caf\xE9", "caf" + r, "Latin-1 byte"},
      {"\x80x", r + "x", "stray continuation byte"},
      {"\xE6\xB3", r + r, "sequence cut short at the end"},
      {"\xE6\xB3x", r + r + "x", "sequence cut short by ASCII"},
      {"\xC0\xAF", r + r, "overlong '/'"},
      {"\xE0\x80\xAF", r + r + r, "overlong three-byte"},
      {"\xED\xA0\x80", r + r + r, "UTF-16 surrogate"},
      {"\xF4\x90\x80\x80", r + r + r + r, "past U+10FFFF"},
      {"\xF5\xFF\xFE", r + r + r, "bytes that never start a sequence"},
      {"ok \xFF\xFE bad 注", "ok " + r + r + " bad 注", "valid text around bad bytes"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(IsValidUtf8(c.in)) << c.why;
    std::string fixed = ToValidUtf8(c.in);
    EXPECT_EQ(fixed, c.out) << c.why;
    EXPECT_TRUE(IsValidUtf8(fixed)) << c.why;
    EXPECT_EQ(ToValidUtf8(fixed), fixed) << c.why;
  }
}

}  // namespace
}  // namespace farm
