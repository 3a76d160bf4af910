#include "common/strings.h"

#include <gtest/gtest.h>

namespace farm {
namespace {

TEST(StringsTest, AsciiLowerTouchesOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("Application/VND.PyPI+JSON"), "application/vnd.pypi+json");
  EXPECT_EQ(AsciiLower("SHA256=ABCDEF0123"), "sha256=abcdef0123");
  EXPECT_EQ(AsciiLower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // UTF-8 bytes are kept
  EXPECT_EQ(AsciiLower(""), "");
}

TEST(StringsTest, TrimSpaceDropsAsciiWhiteSpaceAtBothEnds) {
  EXPECT_EQ(TrimSpace(" \t\r\n token \v\f"), "token");
  EXPECT_EQ(TrimSpace("a b"), "a b");
  EXPECT_EQ(TrimSpace(" \n "), "");
  EXPECT_EQ(TrimSpace("\xc2\xa0x"), "\xc2\xa0x");  // a no-break space is not ASCII
}

}  // namespace
}  // namespace farm
