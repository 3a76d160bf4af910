// The catalog's recipes (kernels/<package>/recipe.yaml) as farmd reads them: each parses,
// its whole matrix expands without a rejected cell, and every cell obeys the arch rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/arch.h"
#include "common/recipe/cell_settings.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

namespace stdfs = std::filesystem;

const std::set<std::string> kCatalog = {"sageattention", "sageattn3", "triton", "flash-attn",
                                        "flash-attn-3"};

LoadedRecipe Load(const std::string& package) {
  auto loaded =
      LoadRecipeFile(std::string(FARM_SOURCE_DIR) + "/kernels/" + package + "/recipe.yaml");
  EXPECT_TRUE(loaded.ok()) << package << ": " << loaded.status().ToString();
  return loaded.ok() ? *loaded : LoadedRecipe{};
}

std::vector<farm::v1::MatrixCell> Cells(const farm::v1::Recipe& recipe) {
  MatrixExpansion expansion = ExpandMatrix({}, recipe.matrix());
  EXPECT_TRUE(expansion.status.ok()) << recipe.name() << ": " << expansion.status.ToString();
  for (const auto& why : expansion.rejected) ADD_FAILURE() << recipe.name() << ": " << why;
  EXPECT_FALSE(expansion.cells.empty()) << recipe.name();
  return expansion.cells;
}

// The arch rules every cell of the catalog obeys (docs/arch-rules.md).
void CheckCell(const std::string& package, const farm::v1::MatrixCell& cell) {
  std::string where = package + " " + DescribeCell(cell);
  EXPECT_TRUE(arch::CheckTorchCuda(cell.torch(), cell.cuda()).ok()) << where;
  if (cell.arch_list().empty()) return;
  auto targets = arch::ParseArchList(cell.arch_list());
  ASSERT_TRUE(targets.ok()) << where << ": " << targets.status().ToString();
  auto cuda = arch::ParseVersion(cell.cuda());
  ASSERT_TRUE(cuda.ok()) << where;
  EXPECT_TRUE(arch::CheckCuda(*targets, *cuda).ok()) << where;
  for (const arch::Target& t : *targets) {
    if (t.major != 12 || t.minor != 1) continue;
    // GB10 (12.1) is an aarch64 machine, and sm_121 needs CUDA 12.9.
    EXPECT_EQ(cell.platform(), "linux_aarch64") << where;
    EXPECT_GE(*cuda, (arch::Version{12, 9})) << where << ": sm_121 needs CUDA 12.9";
  }
  if (cell.platform() == "linux_aarch64") {  // the catalog's aarch64 GPU is GB10
    auto runs_on = arch::RunsOn(*targets);
    EXPECT_NE(std::find(runs_on.begin(), runs_on.end(), (arch::Version{12, 1})), runs_on.end())
        << where << ": an aarch64 wheel that does not run on GB10";
  }
}

TEST(CatalogTest, EveryRecipeParsesAndEveryCellObeysTheArchRules) {
  std::set<std::string> found;
  for (const auto& entry : stdfs::directory_iterator(std::string(FARM_SOURCE_DIR) + "/kernels")) {
    if (stdfs::exists(entry.path() / "recipe.yaml")) found.insert(entry.path().filename());
  }
  for (const auto& package : kCatalog) EXPECT_TRUE(found.count(package)) << package;
  for (const auto& package : found) {
    LoadedRecipe loaded = Load(package);
    for (const auto& cell : Cells(loaded.recipe)) CheckCell(package, cell);
    // The validation script travels with the recipe (it is not in the upstream source).
    EXPECT_FALSE(loaded.recipe.validation().script_content().empty()) << package;
  }
}

TEST(CatalogTest, CellsAreTheOnesTheCatalogPromises) {
  auto count = [](const std::string& package) {
    std::map<std::string, int> per_platform;
    for (const auto& cell : Cells(Load(package).recipe)) ++per_platform[cell.platform()];
    return per_platform;
  };
  // Four Pythons; x86_64: five arch lists with two torch/CUDA pairs; aarch64: 12.1a on 13.0.
  EXPECT_EQ(count("sageattention"),
            (std::map<std::string, int>{{"linux_aarch64", 4}, {"linux_x86_64", 40}}));
  EXPECT_EQ(count("sageattn3")["linux_aarch64"], 2);  // 12.1a, Python 3.12 and 3.13
  EXPECT_EQ(count("flash-attn-3").size(), 1u);
  EXPECT_TRUE(Load("triton").recipe.network());
  EXPECT_FALSE(Load("sageattn3").recipe.patches().empty());
}

// The GB10 chain (kernels/sageattention/gb10-chain.yaml) requires the catalog's Triton at
// its pinned commit, and each of its cells is served by a Triton cell (same platform and
// Python; Triton names no CUDA, torch or arch list).
TEST(CatalogTest, Gb10ChainRequiresThePinnedTritonAndEveryCellIsServed) {
  auto chain =
      LoadRecipeFile(std::string(FARM_SOURCE_DIR) + "/kernels/sageattention/gb10-chain.yaml");
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_EQ(chain->recipe.requirements_size(), 1);
  const farm::v1::Requirement& r = chain->recipe.requirements(0);
  EXPECT_EQ(r.recipe(), "triton");
  EXPECT_TRUE(r.for_build() && r.for_validation());
  LoadedRecipe triton = Load("triton");
  EXPECT_EQ(triton.recipe.source().git().commit(), r.commit());
  EXPECT_TRUE(triton.recipe.network());
  std::vector<farm::v1::MatrixCell> serving = Cells(triton.recipe);
  for (const auto& cell : Cells(chain->recipe)) {
    CheckCell("sageattention gb10-chain", cell);
    EXPECT_EQ(cell.platform(), "linux_aarch64");
    EXPECT_EQ(cell.arch_list(), "12.1a");
    bool served = std::any_of(serving.begin(), serving.end(), [&](const auto& t) {
      return t.platform() == cell.platform() && t.python() == cell.python() && t.cuda().empty() &&
             t.torch().empty() && t.arch_list().empty();
    });
    EXPECT_TRUE(served) << DescribeCell(cell);
  }
}

// SageAttention following torch: C++20 for torch 2.14 and later (torch's headers refuse
// less), the flags upstream tests with for the torches before.
TEST(CatalogTest, SageattentionFollowingTorchGetsCxx20FromTorch214) {
  auto follow =
      LoadRecipeFile(std::string(FARM_SOURCE_DIR) + "/kernels/sageattention/follow-torch.yaml");
  ASSERT_TRUE(follow.ok()) << follow.status().ToString();
  farm::v1::MatrixCell cell;
  cell.set_python("3.12");
  cell.set_cuda("13.0");
  cell.set_arch_list("9.0a");
  cell.set_platform("linux_x86_64");
  cell.set_torch("2.13");
  EXPECT_TRUE(MatchingCellSettings(follow->recipe, cell).empty());
  EXPECT_FALSE(ApplyCellSettings(follow->recipe, cell).recipe.env().contains("CXX_APPEND_FLAGS"));
  cell.set_torch("2.14");
  CellRecipe applied = ApplyCellSettings(follow->recipe, cell);
  EXPECT_EQ(applied.recipe.env().at("CXX_APPEND_FLAGS"), "-std=c++20");
  EXPECT_EQ(applied.recipe.env().at("NVCC_APPEND_FLAGS"), "-std=c++20");
  EXPECT_EQ(applied.applied.size(), 1u);
}

}  // namespace
}  // namespace farm::recipe
