// Matching a request to a recipe: the axes that express the cell, and each refusal with
// the reason the requester reads.
#include "daemon/requests/match.h"

#include <gtest/gtest.h>

#include "common/recipe/recipe.h"

namespace farm::requests {
namespace {

farm::v1::Recipe Parse(const std::string& matrix) {
  auto r = recipe::ParseRecipe(
      "name: attn\nversion: \"1.0\"\n"
      "source:\n  git: {url: \"https://example.invalid/attn.git\", commit: "
      "\"0123456789abcdef0123456789abcdef01234567\"}\n"
      "build: |\n  echo build\nmatrix:\n" +
          matrix,
      "attn.yaml");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : farm::v1::Recipe();
}

constexpr char kMatrix[] =
    "  python: [\"3.11\", \"3.12\"]\n  torch: [\"2.8\", \"2.9\"]\n  cuda: [\"12.8\", \"13.0\"]\n"
    "  arch_lists: [\"8.9\", \"9.0\", \"12.0a\"]\n";

Spec Want() {
  return Spec{.package = "attn",
              .python = "3.12",
              .torch = "2.9",
              .cuda = "12.8",
              .compute_capability = "9.0",
              .platform = "linux_x86_64"};
}

std::string Refusal(const farm::v1::Recipe& recipe, const Spec& spec) {
  auto m = MatchRecipe(recipe, spec);
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kFailedPrecondition);
  return m.status().message();
}

TEST(MatchTest, OneValuePerAxisAndTheArchListThatRunsOnTheGpu) {
  auto m = MatchRecipe(Parse(kMatrix), Want());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->cell.python(), "3.12");
  EXPECT_EQ(m->cell.torch(), "2.9");
  EXPECT_EQ(m->cell.cuda(), "12.8");
  EXPECT_EQ(m->cell.arch_list(), "9.0");
  ASSERT_EQ(m->axes.arch_lists_size(), 1);
  EXPECT_EQ(m->axes.platform_size(), 0);  // the recipe has no platform axis
  Spec blackwell = Want();
  blackwell.compute_capability = "12.0";
  auto b = MatchRecipe(Parse(kMatrix), blackwell);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->cell.arch_list(), "12.0a");
}

TEST(MatchTest, RefusesWithTheReason) {
  const farm::v1::Recipe recipe = Parse(kMatrix);
  Spec s = Want();
  s.version = "2.0";
  EXPECT_EQ(Refusal(recipe, s), "the farm's recipe of attn builds version 1.0, not 2.0");
  s = Want();
  s.torch = "1.0";
  EXPECT_EQ(Refusal(recipe, s), "torch 1.0 is not on the indexes the farm knows");
  s = Want();
  s.torch = "2.7";
  EXPECT_EQ(Refusal(recipe, s), "the recipe of attn builds for torch 2.8, 2.9, not torch 2.7");
  s = Want();
  s.torch.clear();
  EXPECT_NE(Refusal(recipe, s).find("the request names no torch"), std::string::npos);
  s = Want();
  s.python = "3.10";
  EXPECT_EQ(Refusal(recipe, s), "the recipe of attn builds for Python 3.11, 3.12, not Python 3.10");
  s = Want();
  s.compute_capability = "8.0";
  EXPECT_EQ(Refusal(recipe, s),
            "no arch list of the recipe of attn (8.9, 9.0, 12.0a) runs on compute capability 8.0");
}

TEST(MatchTest, RefusesAGpuNoCudaOfTheRecipeCompilesFor) {
  const farm::v1::Recipe recipe =
      Parse("  python: [\"3.11\"]\n  cuda: [\"12.4\"]\n  arch_lists: [\"8.9\"]\n");
  Spec s = Want();
  s.python = "3.11";
  s.torch.clear();
  s.cuda = "12.4";
  s.compute_capability = "12.0";
  std::string why = Refusal(recipe, s);
  EXPECT_NE(why.find("the GPU (compute capability 12.0) needs an arch that no CUDA of the recipe "
                     "of attn supports (CUDA 12.4)"),
            std::string::npos)
      << why;
}

TEST(MatchTest, TheMatrixRulesDropACellWithTheirReason) {
  // torch 2.9 ships no CUDA 12.4 wheels: the matrix check drops the cell.
  const farm::v1::Recipe recipe =
      Parse("  python: [\"3.11\"]\n  torch: [\"2.9\"]\n  cuda: [\"12.4\"]\n");
  Spec s = Want();
  s.python = "3.11";
  s.cuda = "12.4";
  std::string why = Refusal(recipe, s);
  EXPECT_NE(why.find("the recipe of attn cannot build that cell: "), std::string::npos) << why;
  EXPECT_NE(why.find("torch 2.9 is not released for CUDA 12.4"), std::string::npos) << why;
}

}  // namespace
}  // namespace farm::requests
