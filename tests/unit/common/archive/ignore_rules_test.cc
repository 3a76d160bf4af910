#include "common/archive/ignore_rules.h"

#include <gtest/gtest.h>

namespace farm::archives {
namespace {

TEST(GlobMatchTest, StarsQuestionMarksAndClasses) {
  EXPECT_TRUE(GlobMatch("*.log", "build.log"));
  EXPECT_FALSE(GlobMatch("*.log", "a/build.log"));  // '*' never crosses '/'
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "a/c"));
  EXPECT_TRUE(GlobMatch("[a-c]x", "bx"));
  EXPECT_FALSE(GlobMatch("[!a-c]x", "bx"));
  EXPECT_TRUE(GlobMatch("[!a-c]x", "dx"));
  EXPECT_TRUE(GlobMatch("\\*lit", "*lit"));
  EXPECT_FALSE(GlobMatch("\\*lit", "xlit"));
  EXPECT_TRUE(GlobMatch("[unclosed", "[unclosed"));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "x"));
}

TEST(GlobMatchTest, DoubleStarComponents) {
  EXPECT_TRUE(GlobMatch("**/foo", "foo"));
  EXPECT_TRUE(GlobMatch("**/foo", "a/b/foo"));
  EXPECT_TRUE(GlobMatch("a/**/b", "a/b"));
  EXPECT_TRUE(GlobMatch("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(GlobMatch("a/**/b", "ab"));
  EXPECT_TRUE(GlobMatch("a/**", "a/x/y"));
  EXPECT_FALSE(GlobMatch("a/**", "b/x"));
  EXPECT_TRUE(GlobMatch("**", "anything/at/all"));
}

TEST(IgnoreRulesTest, GitignoreSemantics) {
  IgnoreRules rules;
  rules.Add("# comment\n\n*.log\n!keep.log\n/build\ndist/\ndocs/*.html\n\\#hash\n  \n", "");
  EXPECT_TRUE(rules.Ignored("x.log", false));
  EXPECT_TRUE(rules.Ignored("deep/er/x.log", false));  // no '/': any depth
  EXPECT_FALSE(rules.Ignored("keep.log", false));      // negation after the pattern wins
  EXPECT_TRUE(rules.Ignored("build", true));
  EXPECT_FALSE(rules.Ignored("src/build", true));  // leading '/': anchored
  EXPECT_TRUE(rules.Ignored("dist", true));
  EXPECT_TRUE(rules.Ignored("sub/dist", true));
  EXPECT_FALSE(rules.Ignored("dist", false));  // trailing '/': directories only
  EXPECT_TRUE(rules.Ignored("docs/a.html", false));
  EXPECT_FALSE(rules.Ignored("x/docs/a.html", false));  // inner '/': anchored
  EXPECT_TRUE(rules.Ignored("#hash", false));
  EXPECT_FALSE(rules.Ignored("# comment", false));
}

TEST(IgnoreRulesTest, PatternsApplyBelowTheirFilesDirectory) {
  IgnoreRules rules;
  rules.Add("*.tmp\n", "");
  rules.Add("/gen\n!important.tmp\n", "pkg");
  EXPECT_TRUE(rules.Ignored("pkg/gen", true));
  EXPECT_FALSE(rules.Ignored("gen", true));
  EXPECT_FALSE(rules.Ignored("other/gen", true));
  EXPECT_FALSE(rules.Ignored("pkg/important.tmp", false));  // the deeper file wins
  EXPECT_TRUE(rules.Ignored("important.tmp", false));
  EXPECT_FALSE(rules.Ignored("pkgx/gen", true));  // "pkg" is not a prefix of "pkgx"
}

TEST(IgnoreRulesTest, TrailingSpacesAndOddInput) {
  IgnoreRules rules;
  rules.Add("spaced   \nescaped\\ \n!\n/\n\r\n", "");
  EXPECT_TRUE(rules.Ignored("spaced", false));
  EXPECT_TRUE(rules.Ignored("escaped ", false));
  EXPECT_FALSE(rules.Ignored("", true));
  EXPECT_EQ(rules.empty(), false);
}

}  // namespace
}  // namespace farm::archives
