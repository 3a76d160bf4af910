#include "common/wheel/metadata/dependency.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace farm::wheel {
namespace {

TEST(DependencyTest, ParsesWhatWheelsDeclare) {
  auto dep = ParseDependency(
      "triton==3.4.0; platform_system == \"Linux\" and platform_machine == \"x86_64\"");
  ASSERT_OK(dep.status());
  EXPECT_EQ(dep->name, "triton");
  EXPECT_EQ(dep->specifier, "==3.4.0");
  EXPECT_EQ(dep->marker, "platform_system == \"Linux\" and platform_machine == \"x86_64\"");

  dep = ParseDependency("cuda-toolkit[nvrtc,cublas, cudart]==13.0.2; platform_system == \"Linux\"");
  ASSERT_OK(dep.status());
  EXPECT_EQ(dep->extras, (std::vector<std::string>{"cublas", "cudart", "nvrtc"}));
  EXPECT_EQ(dep->specifier, "==13.0.2");

  dep = ParseDependency("pytest (>=4.6) ; extra == 'develop'");
  ASSERT_OK(dep.status());
  EXPECT_EQ(dep->name, "pytest");
  EXPECT_EQ(dep->specifier, ">=4.6");
  EXPECT_EQ(dep->marker, "extra == 'develop'");

  dep = ParseDependency("filelock");
  ASSERT_OK(dep.status());
  EXPECT_EQ(dep->specifier, "");
  EXPECT_EQ(dep->marker, "");
}

TEST(DependencyTest, RefusesUrlsAndWhatIsOutsideTheGrammar) {
  for (const char* bad : {"pkg @ https://evil/x.whl", "-pkg", "pkg.", "pkg[a", "pkg[a b]", "",
                          "pkg>=1 | cat", "pkg (>=1", "pkg>=1$"}) {
    EXPECT_EQ(ParseDependency(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ParseDependency(std::string(kMaxDependencyBytes + 1, 'a')).ok());
}

TEST(DependencyTest, TheHeadLeavesTheVersionPartAsWritten) {
  auto head = ParseDependencyHead("  Torch[Opt_Einsum, cuda] @ https://x/t.whl ; extra == 'a'");
  ASSERT_OK(head.status());
  EXPECT_EQ(head->name, "Torch");
  EXPECT_EQ(head->extras, (std::vector<std::string>{"cuda", "opt-einsum"}));
  EXPECT_EQ(head->specifier, "@ https://x/t.whl");
  EXPECT_EQ(head->marker, "extra == 'a'");
  head = ParseDependencyHead("; nothing");
  ASSERT_OK(head.status());
  EXPECT_EQ(head->name, "");
  EXPECT_FALSE(ParseDependencyHead("torch[cuda").ok());
  EXPECT_FALSE(ParseDependencyHead("torch[cuda;x]").ok());
  EXPECT_FALSE(ParseDependencyHead("torch[<script>]").ok());
  EXPECT_EQ(DependencyName(" torch_x.y>=1"), "torch_x.y");
  EXPECT_EQ(DependencyName(">=1"), "");
}

TEST(DependencyTest, MarkerNamesExtraOnlyAsAVariable) {
  EXPECT_TRUE(MarkerNamesExtra("extra == 'dev'"));
  EXPECT_TRUE(MarkerNamesExtra("python_version >= '3.9' and (extra=='t')"));
  EXPECT_TRUE(MarkerNamesExtra("\"torch\" in extra"));
  EXPECT_FALSE(MarkerNamesExtra("platform_release == \"extra\""));
  EXPECT_FALSE(MarkerNamesExtra("extras == 'x' or x.extra == 'y'"));
  EXPECT_FALSE(MarkerNamesExtra(""));
}

}  // namespace
}  // namespace farm::wheel
