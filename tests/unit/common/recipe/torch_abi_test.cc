// `torch_abi:` and `environment:` of a recipe: the parser's refusals with their positions,
// the build plan (one stable-ABI build per CUDA major and arch list, validated with every
// torch from the floor up) and each cell's provisioning spec.
#include <gtest/gtest.h>

#include <string>

#include "common/recipe/build_plan.h"
#include "common/recipe/cell_environment.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/wheel/identity.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

constexpr char kHead[] = R"(name: stable-example
source: {local: .}
build: make
)";

constexpr char kStableMatrix[] = R"(matrix:
  python: ["3.10", "3.12"]
  torch: ["2.9", "2.10", "2.11"]
  cuda: ["12.8", "13.0"]
  arch_lists: ["9.0a", "12.0a"]
  platform: [linux_x86_64]
)";

std::string ErrorOf(const std::string& yaml) {
  auto r = ParseRecipe(yaml, "recipe.yaml");
  EXPECT_FALSE(r.ok()) << yaml;
  return r.ok() ? "" : r.status().message();
}

farm::v1::Recipe Parse(const std::string& yaml) {
  auto r = ParseRecipe(yaml, "recipe.yaml");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : farm::v1::Recipe();
}

std::vector<std::string> Torches(const PlannedBuild& b) {
  std::vector<std::string> out;
  for (const auto& c : b.validate) out.push_back(c.torch() + "/" + c.cuda() + "/" + c.python());
  return out;
}

TEST(TorchAbiParseTest, ReadsAStableFloorWithAbi3) {
  auto r =
      Parse(std::string(kHead) + kStableMatrix + "torch_abi: {stable: \"2.9\", abi3: \"3.10\"}\n");
  EXPECT_EQ(r.torch_abi().stable_floor(), "2.9");
  EXPECT_EQ(r.torch_abi().abi3(), "3.10");
  EXPECT_FALSE(r.torch_abi().exact_pin());
  auto exact = Parse(std::string(kHead) +
                     "matrix: {torch: [\"2.8\"], cuda: [\"12.8\"]}\ntorch_abi: {pin: exact}\n");
  EXPECT_TRUE(exact.torch_abi().exact_pin());
  EXPECT_TRUE(exact.torch_abi().stable_floor().empty());
}

TEST(TorchAbiParseTest, RefusesNonsenseWithItsPosition) {
  const std::string m = std::string(kHead) + kStableMatrix;  // torch_abi is on line 10
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.8\"}\n"),
            "recipe.yaml:10:21: \"torch_abi.stable\" is 2.8, but torch's stable ABI starts with "
            "2.9; a build for older torch is one build per torch (leave torch_abi.stable out)");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.9.1\"}\n"),
            "recipe.yaml:10:21: \"torch_abi.stable\" must be the torch floor as MAJOR.MINOR such "
            "as \"2.9\", got \"2.9.1\"");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.10\"}\n"),
            "recipe.yaml:10:21: matrix.torch lists 2.9, below torch_abi.stable 2.10: a wheel "
            "built for the stable ABI of 2.10 does not load there");
  EXPECT_EQ(ErrorOf(m + "torch_abi:\n  abi3: \"3.10\"\n"),
            "recipe.yaml:11:9: an abi3 wheel needs a build that uses only Python's limited API, "
            "and a build against torch's full C++ API (torch/extension.h, pybind11) uses the "
            "whole Python C API; build against torch's stable ABI (torch_abi.stable) to tag the "
            "wheel abi3");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.9\", abi3: \"3.11\"}\n"),
            "recipe.yaml:10:34: matrix.python lists 3.10, older than torch_abi.abi3 3.11: a "
            "cp311-abi3 wheel does not install there");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.9\", abi3: \"2.7\"}\n"),
            "recipe.yaml:10:34: \"torch_abi.abi3\" is 2.7, but Python's limited API (abi3) "
            "exists from 3.2 on");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.9\", pin: exact}\n"),
            "recipe.yaml:10:33: \"torch_abi.pin\" is for builds per torch; a stable-ABI wheel "
            "requires torch>=2.9");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {pin: patch}\n"),
            "recipe.yaml:10:18: \"torch_abi.pin\" must be minor (torch==X.Y.*) or exact "
            "(torch==X.Y.Z), got \"patch\"");
  EXPECT_EQ(ErrorOf(m + "torch_abi: {stable: \"2.9\", py_limited_api: true}\n"),
            "recipe.yaml:10:28: unknown field \"py_limited_api\" in torch_abi (expected one of: "
            "stable, abi3, pin)");
  EXPECT_EQ(
      ErrorOf(std::string(kHead) + "matrix: {cuda: [\"13.0\"]}\ntorch_abi: {stable: \"2.9\"}\n"),
      "recipe.yaml:5:21: a stable-ABI build is validated with each torch of matrix.torch "
      "from the floor up; list them there");
  EXPECT_EQ(ErrorOf(m + "publish: {local_version: \"cu{cuda_nodot}torch{torch}\"}\n"
                        "torch_abi: {stable: \"2.9\"}\n"),
            "recipe.yaml:11:21: publish.local_version names {torch}, but a stable-ABI wheel "
            "serves every torch from the floor up; use {variant} (which says "
            "\"torch2.9andhigher\") or leave the torch out");
}

TEST(BuildPlanTest, OneStableBuildPerCudaMajorAndArchListValidatedWithEveryTorch) {
  auto r =
      Parse(std::string(kHead) + kStableMatrix + "torch_abi: {stable: \"2.9\", abi3: \"3.10\"}\n");
  BuildPlan plan = PlanBuilds({}, r);
  ASSERT_OK(plan.status);
  for (const auto& why : plan.rejected) ADD_FAILURE() << why;
  // 2 Pythons x 3 torch x 2 CUDA x 2 arch lists = 24 cells; CUDA 12 and 13 x 2 arch lists.
  ASSERT_EQ(plan.builds.size(), 4u);
  const PlannedBuild& first = plan.builds[0];
  EXPECT_EQ(DescribeCell(first.build),
            "python=3.10 torch=2.11 cuda=12.8 arch_list=9.0a platform=linux_x86_64");
  EXPECT_EQ(first.torch_requirement, "torch>=2.9");
  EXPECT_EQ(first.python_tag, "cp310");
  EXPECT_EQ(first.abi_tag, "abi3");
  EXPECT_EQ(Torches(first),
            (std::vector<std::string>{"2.9/12.8/3.10", "2.10/12.8/3.10", "2.11/12.8/3.10",
                                      "2.9/12.8/3.12", "2.10/12.8/3.12", "2.11/12.8/3.12"}));
  EXPECT_EQ(DescribeValidation(first),
            "validated with torch 2.9, 2.10, 2.11 on Python 3.10, 3.12 (CUDA 12.8)");
  EXPECT_EQ(DescribeCell(plan.builds[2].build),
            "python=3.10 torch=2.11 cuda=13.0 arch_list=9.0a platform=linux_x86_64");
  EXPECT_EQ(plan.builds[3].build.arch_list(), "12.0a");
  // Without abi3 each Python is its own build.
  auto per_python = Parse(std::string(kHead) + kStableMatrix + "torch_abi: {stable: \"2.9\"}\n");
  BuildPlan eight = PlanBuilds({}, per_python);
  ASSERT_EQ(eight.builds.size(), 8u);
  EXPECT_TRUE(eight.builds[0].abi_tag.empty());
  EXPECT_EQ(Torches(eight.builds[0]),
            (std::vector<std::string>{"2.9/12.8/3.10", "2.10/12.8/3.10", "2.11/12.8/3.10"}));
}

TEST(BuildPlanTest, TheBuildTakesTheOldestCudaOfItsMajorAndANarrowedRequestStillFansOut) {
  auto r = Parse(std::string(kHead) +
                 "matrix:\n  python: [\"3.12\"]\n  torch: [\"2.9\", \"2.11\"]\n"
                 "  cuda: [\"13.0\", \"12.6\", \"12.8\"]\n  arch_lists: [\"9.0a\"]\n"
                 "torch_abi: {stable: \"2.9\"}\n");
  BuildPlan plan = PlanBuilds({}, r);
  ASSERT_EQ(plan.builds.size(), 2u);
  EXPECT_EQ(plan.builds[0].build.cuda(), "13.0");
  EXPECT_EQ(plan.builds[1].build.cuda(), "12.6");
  EXPECT_EQ(plan.builds[1].build.torch(), "2.11");
  EXPECT_EQ(plan.builds[1].validate.size(), 4u);
  farm::v1::MatrixAxes only_211;
  only_211.add_torch("2.11");
  only_211.add_cuda("12.8");
  BuildPlan narrow = PlanBuilds(only_211, r);
  ASSERT_EQ(narrow.builds.size(), 1u);
  EXPECT_EQ(Torches(narrow.builds[0]), std::vector<std::string>{"2.11/12.8/3.12"});
}

TEST(BuildPlanTest, BuildsPerTorchRequireTheirMinorOrTheExactRelease) {
  const std::string m =
      std::string(kHead) +
      "matrix: {python: [\"3.12\"], torch: [\"2.8\", \"2.11\"], cuda: [\"12.8\"]}\n";
  BuildPlan minor = PlanBuilds({}, Parse(m));
  ASSERT_EQ(minor.builds.size(), 2u);
  EXPECT_EQ(minor.builds[0].torch_requirement, "torch==2.8.*");
  EXPECT_EQ(minor.builds[1].torch_requirement, "torch==2.11.*");
  EXPECT_EQ(minor.builds[1].validate.size(), 1u);
  BuildPlan exact = PlanBuilds({}, Parse(m + "torch_abi: {pin: exact}\n"));
  EXPECT_EQ(exact.builds[0].torch_requirement, "torch==2.8");
  BuildPlan none = PlanBuilds({}, Parse(std::string(kHead) + "matrix: {cuda: [\"13.0\"]}\n"));
  ASSERT_EQ(none.builds.size(), 1u);
  EXPECT_TRUE(none.builds[0].torch_requirement.empty());
}

TEST(BuildPlanTest, AStableWheelSaysItServesEveryTorchFromTheFloor) {
  auto r = Parse(std::string(kHead) + kStableMatrix + "torch_abi: {stable: \"2.9\"}\n");
  BuildPlan plan = PlanBuilds({}, r);
  auto label =
      wheel::RecipeWheelLabel(r, plan.builds[2].build, {{arch::Image::Kind::kSass, 9, 0, 'a'}});
  ASSERT_OK(label.status());
  EXPECT_EQ(*label, "cu13torch2.9andhigher.sm90a");
}

constexpr char kProvisioned[] = R"(matrix:
  python: ["3.13"]
  torch: ["2.8", "2.11"]
  cuda: ["12.8"]
environment:
  torch: {"2.8": "2.8.0", "2.11": newest}
  build_requirements:
    - setuptools==80.9.0
    - "ninja>=1.11"
)";

TEST(EnvironmentTest, ParsesAndGivesEachCellItsProvisioningSpec) {
  auto r = Parse(std::string(kHead) + kProvisioned);
  ASSERT_TRUE(r.has_environment());
  EXPECT_EQ(r.environment().build_requirements_size(), 2);
  MatrixExpansion cells = ExpandMatrix({}, r.matrix());
  ASSERT_EQ(cells.cells.size(), 2u);
  auto pinned = CellEnvironment(r, cells.cells[0]);
  ASSERT_OK(pinned.status());
  EXPECT_EQ(pinned->python(), "3.13");
  EXPECT_EQ(pinned->torch_version(), "2.8.0");
  EXPECT_EQ(pinned->torch_variant(), "cu128");
  EXPECT_EQ(pinned->cuda(), "12.8");
  EXPECT_EQ(pinned->platform(), "linux_x86_64");
  EXPECT_EQ(DescribeProvisionSpec(*pinned),
            "Python 3.13 + torch 2.8.0+cu128 + CUDA 12.8 + 2 build requirements");
  auto newest = CellEnvironment(r, cells.cells[1]);
  ASSERT_OK(newest.status());
  EXPECT_TRUE(newest->torch_newest());
  EXPECT_EQ(newest->torch_minor(), "2.11");
  EXPECT_EQ(DescribeProvisionSpec(*newest),
            "Python 3.13 + torch 2.11 (newest on cu128) + CUDA 12.8 + 2 build requirements");
  farm::v1::MatrixCell stray = cells.cells[0];
  stray.set_torch("2.10");
  EXPECT_EQ(CellEnvironment(r, stray).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CellEnvironment(Parse(std::string(kHead)), cells.cells[0]).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(TorchVariant("13.0"), "cu130");
  EXPECT_EQ(TorchVariant(""), "cpu");
}

// A release candidate's torch comes from the variant's pre-release index; farmd marks the
// candidates at submit, and a recipe file cannot mark them itself.
TEST(EnvironmentTest, AReleaseCandidatesTorchComesFromThePrereleaseIndex) {
  auto r = Parse(std::string(kHead) + kProvisioned);
  MatrixExpansion cells = ExpandMatrix({}, r.matrix());
  r.mutable_environment()->add_torch_from_test(cells.cells[0].torch());
  (*r.mutable_environment()->mutable_torch())["2.11"] = "2.11.0rc2";
  MarkTorchCandidates(&r);
  EXPECT_EQ(std::vector<std::string>(r.environment().torch_candidates().begin(),
                                     r.environment().torch_candidates().end()),
            (std::vector<std::string>{"2.11", "2.8"}));
  auto rc = CellEnvironment(r, cells.cells[0]);
  ASSERT_OK(rc.status());
  EXPECT_EQ(rc->torch_variant(), "cu128");
  EXPECT_EQ(rc->torch_index(), "test-cu128");
  EXPECT_EQ(DescribeProvisionSpec(*rc),
            "Python 3.13 + torch 2.8.0+cu128 (release candidate, from test-cu128) + CUDA 12.8 + "
            "2 build requirements");
  // An rc on the release index is a candidate, but comes from that index.
  auto own = CellEnvironment(r, cells.cells[1]);
  ASSERT_OK(own.status());
  EXPECT_EQ(own->torch_index(), "");
  EXPECT_EQ(PrereleaseIndex("cu130"), "test-cu130");
  EXPECT_NE(ErrorOf(std::string(kHead) + kProvisioned + "  torch_candidates: [\"2.8\"]\n")
                .find("torch_candidates"),
            std::string::npos);
}

TEST(EnvironmentTest, ABuildWithoutCudaCodeAsksForNoToolkit) {
  auto r = Parse(std::string(kHead) + kProvisioned + "  toolkit: false\n");
  ASSERT_TRUE(r.environment().no_toolkit());
  auto spec = CellEnvironment(r, ExpandMatrix({}, r.matrix()).cells[0]);
  ASSERT_OK(spec.status());
  EXPECT_EQ(spec->cuda(), "");                // nothing to provision for CUDA...
  EXPECT_EQ(spec->torch_variant(), "cu128");  // ...but torch is still the cell's CUDA build
  EXPECT_FALSE(Parse(std::string(kHead) + kProvisioned).environment().no_toolkit());
}

TEST(EnvironmentTest, RefusesWhatAProvisionerCannotMake) {
  const std::string m =
      std::string(kHead) + "matrix: {python: [\"3.12\"], torch: [\"2.8\"], cuda: [\"12.8\"]}\n";
  EXPECT_EQ(ErrorOf(m + "environment: {torch: {\"2.8\": \"2.8.0+cu128\"}}\n"),
            "recipe.yaml:5:30: environment.torch.2.8 must be a 2.8.PATCH release such as "
            "\"2.8.0\" (the CUDA variant comes from the cell) or newest, got \"2.8.0+cu128\"");
  EXPECT_EQ(ErrorOf(m + "environment: {torch: {\"2.8\": \"2.9.0\"}}\n"),
            "recipe.yaml:5:30: environment.torch.2.8 must be a 2.8.PATCH release such as "
            "\"2.8.0\" (the CUDA variant comes from the cell) or newest, got \"2.9.0\"");
  EXPECT_EQ(ErrorOf(m + "environment: {torch: {\"2.8\": \"2.8.0\", \"2.9\": \"2.9.0\"}}\n"),
            "recipe.yaml:5:39: environment.torch names 2.9, which matrix.torch does not list");
  EXPECT_EQ(ErrorOf(m + "environment: {build_requirements: [setuptools]}\n"),
            "recipe.yaml:5:1: environment.torch must say which release each torch of "
            "matrix.torch installs (\"2.8\": \"2.8.0\" or newest)");
  const std::string t = m + "environment:\n  torch: {\"2.8\": newest}\n  build_requirements: ";
  // Build requirements are PEP 508 requirements the lock resolves; ranges are fine.
  EXPECT_EQ(Parse(t + "[setuptools>=61]\n").environment().build_requirements(0), "setuptools>=61");
  EXPECT_EQ(ErrorOf(t + "[\"wheel==0.45.1 --hash=md5:00\"]\n"),
            "recipe.yaml:7:24: environment.build_requirements[0] must be a PEP 508 requirement "
            "such as \"setuptools>=64\" (no URL): requirement \"wheel==0.45.1 --hash=md5:00\": "
            "unexpected character in the version specifier");
  EXPECT_EQ(ErrorOf(t + "[\"wheel @ https://127.0.0.1/wheel.whl\"]\n")
                .rfind("recipe.yaml:7:24: environment.build_requirements[0] must be a PEP 508 "
                       "requirement such as \"setuptools>=64\" (no URL)",
                       0),
            0u);
  EXPECT_EQ(ErrorOf(t + "[torch==2.8.0]\n"),
            "recipe.yaml:7:24: environment.build_requirements[0] names torch; the cell's torch "
            "comes from environment.torch and its CUDA variant");
  EXPECT_EQ(ErrorOf(t + "[ninja==1.11.1, Ninja==1.13.0]\n"),
            "recipe.yaml:7:39: environment.build_requirements[1] names ninja a second time");
  // torch_requirements: exact pins per torch release with its variant.
  const std::string tr = m +
                         "environment:\n  torch: {\"2.8\": newest}\n"
                         "  build_requirements: [setuptools==80.9.0]\n  torch_requirements:\n";
  auto pinned = Parse(tr +
                      "    \"2.8.0+cu128\": [triton==3.4.0, nvidia-nccl-cu12==2.27.3]\n"
                      "    \"2.8.0+cu129\": [triton==3.4.0]\n");
  ASSERT_EQ(pinned.environment().torch_requirements().size(), 2u);
  EXPECT_EQ(pinned.environment().torch_requirements().at("2.8.0+cu128").pins(1),
            "nvidia-nccl-cu12==2.27.3");
  EXPECT_EQ(ErrorOf(tr + "    \"2.8.0\": [triton==3.4.0]\n"),
            "recipe.yaml:9:5: environment.torch_requirements keys are torch releases with "
            "their CUDA variant such as \"2.8.0+cu128\", got \"2.8.0\"");
  EXPECT_EQ(ErrorOf(tr + "    \"2.8.0+cu128\": [triton>=3]\n"),
            "recipe.yaml:9:21: environment.torch_requirements.2.8.0+cu128[0] must be an exact "
            "pin NAME==VERSION, optionally followed by --hash=sha256:HEX, got \"triton>=3\"");
  EXPECT_EQ(ErrorOf(tr + "    \"2.8.0+cu128\": [setuptools==79.0.0]\n"),
            "recipe.yaml:9:21: environment.torch_requirements.2.8.0+cu128[0] pins setuptools, "
            "which environment.build_requirements pins");
  EXPECT_EQ(ErrorOf(tr + "    \"2.8.0+cu128\": [torch==2.8.0]\n"),
            "recipe.yaml:9:21: environment.torch_requirements.2.8.0+cu128[0] pins torch; the "
            "cell's torch comes from environment.torch and its CUDA variant");
  EXPECT_EQ(ErrorOf(tr + "    [a]: [b==1]\n").substr(0, 59),
            "recipe.yaml:9:5: environment.torch_requirements keys are to");
  EXPECT_EQ(ErrorOf(m + "system_site_packages: true\nenvironment: {torch: {\"2.8\": newest}}\n"),
            "recipe.yaml:6:1: a provisioned environment is the whole build environment; "
            "system_site_packages would add the host's packages to it");
  EXPECT_EQ(ErrorOf(m + "container_image: b:1\nenvironment: {torch: {\"2.8\": newest}}\n"),
            "recipe.yaml:6:1: a provisioned environment and container_image both say where "
            "Python and torch come from; keep one");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "environment: {}\n"),
            "recipe.yaml:4:1: a provisioned environment needs matrix.python: the worker "
            "installs that Python for each cell");
}

TEST(TorchFollowParseTest, ReadsASpecOrAMappingAndRefusesWhatCannotBeProvisioned) {
  const std::string env = "environment: {build_requirements: [\"setuptools==66.1.1\"]}\n";
  auto plain = Parse(std::string(kHead) +
                     "matrix: {python: [\"3.11\"], cuda: [\"13.0\"], torch: \">=2.9\"}\n" + env);
  EXPECT_EQ(plain.matrix().torch_follow().spec(), ">=2.9");
  EXPECT_TRUE(plain.matrix().torch().empty());
  auto mapped = Parse(
      std::string(kHead) +
      "matrix: {python: [\"3.11\"], cuda: [\"13.0\"], torch: {newest: 3, prereleases: true}}\n" +
      env);
  EXPECT_EQ(mapped.matrix().torch_follow().newest(), 3);
  EXPECT_TRUE(mapped.matrix().torch_follow().prereleases());
  EXPECT_NE(ErrorOf(std::string(kHead) +
                    "matrix: {python: [\"3.11\"], cuda: [\"13.0\"], torch: \"2.9\"}\n" + env)
                .find("recipe.yaml:4:"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead) +
                    "matrix: {python: [\"3.11\"], cuda: [\"13.0\"], torch: \">=2.9\"}\n")
                .find("add an environment: block"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead) + "matrix: {python: [\"3.11\"], torch: \">=2.9\"}\n" + env)
                .find("matrix.cuda"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead) +
                    "matrix: {python: [\"3.11\"], cuda: [\"13.0\"], torch: {}}\n" + env)
                .find("spec"),
            std::string::npos);
}

}  // namespace
}  // namespace farm::recipe
