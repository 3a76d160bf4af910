// The catalog's recipes that ask for provisioned environments (the field reports' cells:
// kernels/sageattn3/provisioned-cu128.yaml, kernels/sageattention/provisioned-*.yaml) and
// the stable-ABI example, as farmd reads them: each parses, its matrix expands without a
// rejected cell that obeys the torch/CUDA table, every cell gets the environment the worker
// is to provision, and the build plan says what each wheel requires.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/recipe/build_plan.h"
#include "common/recipe/cell_environment.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

farm::v1::Recipe Load(const std::string& relative) {
  auto loaded = LoadRecipeFile(std::string(FARM_SOURCE_DIR) + "/kernels/" + relative);
  EXPECT_TRUE(loaded.ok()) << relative << ": " << loaded.status().ToString();
  if (!loaded.ok()) return farm::v1::Recipe();
  // The validation script travels with the recipe (it is not in the upstream source).
  EXPECT_FALSE(loaded->recipe.validation().script_content().empty()) << relative;
  return loaded->recipe;
}

// Every cell of `recipe` with the arch rules checked, and nothing rejected.
std::vector<farm::v1::MatrixCell> Cells(const farm::v1::Recipe& recipe) {
  MatrixExpansion expansion = ExpandMatrix({}, recipe.matrix());
  EXPECT_TRUE(expansion.status.ok()) << expansion.status.ToString();
  for (const auto& why : expansion.rejected) ADD_FAILURE() << recipe.name() << ": " << why;
  for (const auto& cell : expansion.cells) {
    const std::string where = recipe.name() + " " + DescribeCell(cell);
    EXPECT_TRUE(arch::CheckTorchCuda(cell.torch(), cell.cuda()).ok()) << where;
    auto targets = arch::ParseArchList(cell.arch_list());
    auto cuda = arch::ParseVersion(cell.cuda());
    EXPECT_TRUE(targets.ok() && cuda.ok()) << where;
    if (targets.ok() && cuda.ok()) {
      EXPECT_TRUE(arch::CheckCuda(*targets, *cuda).ok()) << where;
    }
  }
  return expansion.cells;
}

// What the worker is to provision for each cell, described as job pages show it.
std::vector<std::string> Environments(const farm::v1::Recipe& recipe,
                                      const std::vector<farm::v1::MatrixCell>& cells) {
  std::vector<std::string> out;
  for (const auto& cell : cells) {
    auto spec = CellEnvironment(recipe, cell);
    EXPECT_TRUE(spec.ok()) << DescribeCell(cell) << ": " << spec.status().ToString();
    if (!spec.ok()) continue;
    EXPECT_EQ(spec->platform(), "linux_x86_64");
    // Build requirements as the package's build needs them; farmd locks the rest.
    for (const auto& requirement : spec->requirements()) {
      EXPECT_FALSE(requirement.empty());
      EXPECT_EQ(requirement.find("torch"), std::string::npos) << requirement;
    }
    out.push_back(cell.arch_list() + ": " + DescribeProvisionSpec(*spec));
  }
  return out;
}

TEST(CatalogProvisionedTest, SageAttention3ForCuda128OnPython313WithTheNewestTorch) {
  farm::v1::Recipe r = Load("sageattn3/provisioned-cu128.yaml");
  EXPECT_EQ(r.name(), "sageattn3");
  EXPECT_FALSE(r.patches().empty());
  EXPECT_FALSE(r.system_site_packages());
  std::vector<farm::v1::MatrixCell> cells = Cells(r);
  EXPECT_EQ(Environments(r, cells),
            (std::vector<std::string>{
                "10.0a: Python 3.13 + torch 2.11 (newest on cu128) + CUDA 12.8 + 5 build "
                "requirements",
                "12.0a: Python 3.13 + torch 2.11 (newest on cu128) + CUDA 12.8 + 5 build "
                "requirements"}));
  auto spec = CellEnvironment(r, cells[0]);
  ASSERT_OK(spec.status());
  EXPECT_TRUE(spec->torch_newest());
  EXPECT_EQ(spec->torch_minor(), "2.11");
  EXPECT_EQ(spec->torch_variant(), "cu128");
  // No hand-written pins: farmd locks what the release `newest` resolves to requires.
  EXPECT_TRUE(spec->torch_requirements().empty());
  // 2.11 is the newest torch minor released for CUDA 12.8: the "newest" of the field report.
  const auto& releases = arch::TorchReleases();
  EXPECT_EQ(releases.back().torch, (arch::Version{2, 11}));
  EXPECT_TRUE(arch::CheckTorchCuda("2.11", "12.8").ok());
  BuildPlan plan = PlanBuilds({}, r);
  ASSERT_OK(plan.status);
  ASSERT_EQ(plan.builds.size(), 2u);
  for (const auto& b : plan.builds) EXPECT_EQ(b.torch_requirement, "torch==2.11.*");
}

TEST(CatalogProvisionedTest, SageAttentionForSm120OnCuda128AndPython311) {
  farm::v1::Recipe r = Load("sageattention/provisioned-sm120-cu128.yaml");
  std::vector<farm::v1::MatrixCell> cells = Cells(r);
  EXPECT_EQ(Environments(r, cells),
            (std::vector<std::string>{
                "12.0a: Python 3.11 + torch 2.8.0+cu128 + CUDA 12.8 + 4 build requirements"}));
  BuildPlan plan = PlanBuilds({}, r);
  ASSERT_EQ(plan.builds.size(), 1u);
  EXPECT_EQ(plan.builds[0].torch_requirement, "torch==2.8.*");
}

TEST(CatalogProvisionedTest, SageAttention220ForCuda128And129OnPython312) {
  farm::v1::Recipe r = Load("sageattention/provisioned-cu128-cu129.yaml");
  EXPECT_EQ(r.version(), "2.2.0");
  std::vector<farm::v1::MatrixCell> cells = Cells(r);
  ASSERT_EQ(cells.size(), 10u);  // five arch lists for each toolkit
  std::set<std::string> variants;
  for (const auto& cell : cells) {
    auto spec = CellEnvironment(r, cell);
    ASSERT_OK(spec.status());
    EXPECT_EQ(spec->python(), "3.12");
    EXPECT_EQ(spec->torch_version(), "2.8.0");
    EXPECT_EQ(spec->torch_variant(), "cu" + cell.cuda().substr(0, 2) + cell.cuda().substr(3));
    EXPECT_EQ(spec->cuda(), cell.cuda());
    variants.insert(spec->torch_variant());
  }
  EXPECT_EQ(variants, (std::set<std::string>{"cu128", "cu129"}));
  BuildPlan plan = PlanBuilds({}, r);
  ASSERT_EQ(plan.builds.size(), 10u);
  for (const auto& b : plan.builds) EXPECT_EQ(b.torch_requirement, "torch==2.8.*");
}

// The catalog's recipe that follows the index: its torch axis is a spec farmd resolves at
// submit (daemon/cron/torch_follow.h, tested there); as read, it lists no torch value.
TEST(CatalogProvisionedTest, SageAttentionFollowingTheIndexNamesItsSpecAndIndexes) {
  farm::v1::Recipe r = Load("sageattention/follow-torch.yaml");
  EXPECT_EQ(r.matrix().torch_follow().spec(), ">=2.8");
  EXPECT_EQ(r.matrix().torch_follow().newest(), 3);
  EXPECT_FALSE(r.matrix().torch_follow().prereleases());
  EXPECT_TRUE(r.matrix().torch().empty());
  EXPECT_EQ(std::vector<std::string>(r.matrix().cuda().begin(), r.matrix().cuda().end()),
            (std::vector<std::string>{"12.8", "13.0"}));
  EXPECT_TRUE(r.has_environment());
}

// The stable-ABI example: 4 Pythons x 3 torches x 2 CUDA x 2 arch lists are 48 cells but
// 4 builds (one per CUDA major and arch list), each a cp310-abi3 wheel requiring torch>=2.9,
// built with Python 3.10 and the newest torch, and validated in its 12 cells.
TEST(CatalogProvisionedTest, StableAbiExamplePlansOneBuildPerCudaMajorAndArchList) {
  farm::v1::Recipe r = Load("examples/stable_abi_example/recipe.yaml");
  EXPECT_EQ(r.torch_abi().stable_floor(), "2.9");
  EXPECT_EQ(r.torch_abi().abi3(), "3.10");
  EXPECT_EQ(Cells(r).size(), 48u);
  BuildPlan plan = PlanBuilds({}, r);
  ASSERT_OK(plan.status);
  ASSERT_EQ(plan.builds.size(), 4u);
  for (const auto& b : plan.builds) {
    EXPECT_EQ(b.torch_requirement, "torch>=2.9");
    EXPECT_EQ(b.python_tag, "cp310");
    EXPECT_EQ(b.abi_tag, "abi3");
    EXPECT_EQ(b.build.python(), "3.10");
    EXPECT_EQ(b.build.torch(), "2.11");
    EXPECT_EQ(b.validate.size(), 12u);
    for (const auto& v : b.validate) {
      EXPECT_EQ(v.cuda(), b.build.cuda());
      EXPECT_EQ(v.arch_list(), b.build.arch_list());
    }
  }
  EXPECT_EQ(DescribeValidation(plan.builds[0]),
            "validated with torch 2.9, 2.10, 2.11 on Python 3.10, 3.11, 3.12, 3.13 (CUDA 12.8)");
}

}  // namespace
}  // namespace farm::recipe
