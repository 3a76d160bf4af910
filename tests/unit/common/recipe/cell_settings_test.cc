#include "common/recipe/cell_settings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/recipe/cell_environment.h"
#include "common/recipe/recipe.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

using Strings = std::vector<std::string>;

constexpr char kCellsHead[] = R"(name: cells
source: {local: src}
build: make
)";

// A recipe over torch 2.9 .. 2.14 and CUDA 12.8 / 13.0 with `extra` appended.
constexpr char kCellsMatrix[] = R"(matrix:
  python: ["3.11", "3.12"]
  torch: ["2.9", "2.10", "2.11"]
  cuda: ["12.8", "13.0"]
  arch_lists: ["7.0;9.0"]
  torch_cuda: {"2.14": ["13.0"]}
  include: [{torch: "2.14", cuda: "13.0"}]
)";

farm::v1::Recipe ParseWithCells(const std::string& extra,
                                const std::string& matrix = kCellsMatrix) {
  Result<farm::v1::Recipe> r = ParseRecipe(std::string(kCellsHead) + matrix + extra, "recipe.yaml");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : farm::v1::Recipe();
}

std::string CellsErrorOf(const std::string& extra, const std::string& matrix = kCellsMatrix) {
  Result<farm::v1::Recipe> r = ParseRecipe(std::string(kCellsHead) + matrix + extra, "recipe.yaml");
  if (r.ok()) return "OK";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

farm::v1::MatrixCell MakeCell(const std::string& python, const std::string& torch,
                              const std::string& cuda, const std::string& arch = "7.0;9.0") {
  farm::v1::MatrixCell c;
  c.set_python(python);
  c.set_torch(torch);
  c.set_cuda(cuda);
  c.set_arch_list(arch);
  return c;
}

farm::v1::CellCondition Range(const std::string& torch, const std::string& cuda = "",
                              const std::string& python = "") {
  farm::v1::CellCondition w;
  w.set_torch(torch);
  w.set_cuda(cuda);
  w.set_python(python);
  return w;
}

TEST(CellMatchesTest, VersionRangesArePep440) {
  EXPECT_TRUE(CellMatches(Range(">=2.10"), MakeCell("3.12", "2.10", "12.8")));
  EXPECT_TRUE(CellMatches(Range(">=2.10"), MakeCell("3.12", "2.14", "12.8")));
  // 2.9 < 2.10 as versions, though "2.9" > "2.10" as text.
  EXPECT_FALSE(CellMatches(Range(">=2.10"), MakeCell("3.12", "2.9", "12.8")));
  EXPECT_TRUE(CellMatches(Range(">=2.9,<2.11"), MakeCell("3.12", "2.10", "12.8")));
  EXPECT_FALSE(CellMatches(Range(">=2.9,<2.11"), MakeCell("3.12", "2.11", "12.8")));
  EXPECT_TRUE(CellMatches(Range("==2.10.*"), MakeCell("3.12", "2.10", "12.8")));
  EXPECT_TRUE(CellMatches(Range("~=2.10"), MakeCell("3.12", "2.14", "12.8")));
  EXPECT_TRUE(CellMatches(Range("", ">=13.0", ">=3.12"), MakeCell("3.12", "2.9", "13.0")));
  EXPECT_FALSE(CellMatches(Range("", ">=13.0", ">=3.12"), MakeCell("3.11", "2.9", "13.0")));
  EXPECT_FALSE(CellMatches(Range("", ">=13.0"), MakeCell("3.12", "2.9", "12.8")));
}

TEST(CellMatchesTest, EveryConditionMustHold) {
  farm::v1::CellCondition w = Range(">=2.10", ">=13.0");
  EXPECT_TRUE(CellMatches(w, MakeCell("3.12", "2.11", "13.0")));
  EXPECT_FALSE(CellMatches(w, MakeCell("3.12", "2.11", "12.8")));
  EXPECT_FALSE(CellMatches(w, MakeCell("3.12", "2.9", "13.0")));
}

TEST(CellMatchesTest, EmptyAxisOrOddValueNeverMatchesARange) {
  EXPECT_FALSE(CellMatches(Range(">=2.10"), MakeCell("3.12", "", "12.8")));
  EXPECT_FALSE(CellMatches(Range(">=2.10"), MakeCell("3.12", "nightly", "12.8")));
  // No condition on an axis: any value, empty included.
  EXPECT_TRUE(CellMatches(Range(""), MakeCell("3.12", "", "")));
}

TEST(CellMatchesTest, PlatformAndArchListAreOneOf) {
  farm::v1::CellCondition w;
  w.add_platform("linux_aarch64");
  w.add_arch_lists("9.0");
  w.add_arch_lists("12.0a");
  farm::v1::MatrixCell c = MakeCell("3.12", "2.10", "13.0", "12.0a");
  c.set_platform("linux_aarch64");
  EXPECT_TRUE(CellMatches(w, c));
  c.set_platform("linux_x86_64");
  EXPECT_FALSE(CellMatches(w, c));
  c.set_platform("linux_aarch64");
  c.set_arch_list("9.0;12.0a");
  EXPECT_FALSE(CellMatches(w, c));
}

TEST(ParseCellsTest, ReadsEveryKindOfSetting) {
  farm::v1::Recipe r = ParseWithCells(R"(cells:
  - when: {torch: ">=2.14"}
    env: {CXXFLAGS: "-std=c++20", NVCC_APPEND_FLAGS: "-std=c++20"}
    timeout: 7200
  - when: {cuda: ">=13.0", python: ">=3.12"}
    arch_list: "7.5;9.0"
    unrequested_archs: fail
)");
  ASSERT_EQ(r.cell_settings_size(), 2);
  const farm::v1::CellSettings& a = r.cell_settings(0);
  EXPECT_EQ(a.when().torch(), ">=2.14");
  EXPECT_EQ(a.env().at("CXXFLAGS"), "-std=c++20");
  EXPECT_EQ(a.timeout_seconds(), 7200);
  EXPECT_EQ(a.origin(), "cells[0] at line 12");
  const farm::v1::CellSettings& b = r.cell_settings(1);
  EXPECT_EQ(b.when().cuda(), ">=13.0");
  EXPECT_EQ(b.when().python(), ">=3.12");
  EXPECT_EQ(b.arch_list(), "7.5;9.0");
  EXPECT_EQ(b.unrequested_archs(), "fail");
}

TEST(ParseCellsTest, PlatformAndArchListTakeOneValueOrAList) {
  farm::v1::Recipe r = ParseWithCells(
      "cells:\n  - when: {platform: linux_aarch64, arch_list: [\"9.0\", \"12.1a\"]}\n"
      "    timeout: 10\n",
      "matrix: {cuda: [\"13.0\"], arch_lists: [\"9.0\", \"12.1a\"], "
      "platform: [linux_x86_64, linux_aarch64]}\n");
  ASSERT_EQ(r.cell_settings_size(), 1);
  EXPECT_EQ(Strings(r.cell_settings(0).when().platform().begin(),
                    r.cell_settings(0).when().platform().end()),
            Strings{"linux_aarch64"});
  EXPECT_EQ(r.cell_settings(0).when().arch_lists_size(), 2);
}

TEST(ParseCellsTest, UnknownAxisOrKeyIsRefusedAtItsPosition) {
  EXPECT_EQ(CellsErrorOf("cells:\n  - when: {rocm: \">=6\"}\n    timeout: 10\n"),
            "recipe.yaml:12:12: unknown field \"rocm\" in cells[0].when (expected one of: python, "
            "torch, cuda, platform, arch_lists, arch_list)");
  EXPECT_EQ(CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    flags: x\n"),
            "recipe.yaml:13:5: unknown field \"flags\" in cells[0] (expected one of: when, env, "
            "build_requirements, arch_list, timeout, unrequested_archs)");
}

TEST(ParseCellsTest, MalformedRangeIsRefusedAtTheValue) {
  std::string e = CellsErrorOf("cells:\n  - when: {torch: \"2.10\"}\n    timeout: 10\n");
  EXPECT_EQ(
      e.rfind("recipe.yaml:12:19: \"cells[0].when.torch\" must be a PEP 440 version range", 0), 0u)
      << e;
  e = CellsErrorOf("cells:\n  - when: {cuda: \">=thirteen\"}\n    timeout: 10\n");
  EXPECT_EQ(e.rfind("recipe.yaml:12:18: \"cells[0].when.cuda\"", 0), 0u) << e;
  e = CellsErrorOf("cells:\n  - when: {python: \"\"}\n    timeout: 10\n");
  EXPECT_EQ(e.rfind("recipe.yaml:12:20: \"cells[0].when.python\"", 0), 0u) << e;
  e = CellsErrorOf("cells:\n  - when: {arch_lists: \"sm_90\"}\n    timeout: 10\n");
  EXPECT_EQ(e.rfind("recipe.yaml:12:24: \"cells[0].when.arch_lists\"", 0), 0u) << e;
}

TEST(ParseCellsTest, SettingsThatCannotApplyAreRefused) {
  // An axis the matrix does not have: no cell could ever match.
  EXPECT_EQ(CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    timeout: 10\n",
                         "matrix: {python: [\"3.12\"]}\n"),
            "recipe.yaml:6:12: \"cells[0].when.torch\": the recipe's matrix has no torch axis, so "
            "no cell can match it");
  // Build requirements without a provisioned environment.
  std::string e =
      CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    build_requirements: [ninja]\n");
  EXPECT_EQ(e.rfind("recipe.yaml:13:5: \"cells[0].build_requirements\" needs an environment:", 0),
            0u)
      << e;
  // An arch list change matched on the arch list it replaces.
  e = CellsErrorOf("cells:\n  - when: {arch_lists: \"7.0;9.0\"}\n    arch_list: \"9.0\"\n");
  EXPECT_EQ(e.rfind("recipe.yaml:13:5: \"cells[0].arch_list\" changes the arch list", 0), 0u) << e;
  // An arch list without CUDA to build it with.
  e = CellsErrorOf("cells:\n  - when: {python: \">=3.12\"}\n    arch_list: \"9.0\"\n",
                   "matrix: {python: [\"3.12\"]}\n");
  EXPECT_EQ(e.rfind("recipe.yaml:7:5: \"cells[0].arch_list\" cannot apply", 0), 0u) << e;
  // A setting the worker always replaces, and a condition with nothing to set.
  e = CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    env: {FARM_PYTHON: x}\n");
  EXPECT_EQ(e.rfind("recipe.yaml:13:11: env \"FARM_PYTHON\" is set by the worker", 0), 0u) << e;
  e = CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n");
  EXPECT_EQ(e.rfind("recipe.yaml:12:5: \"cells[0]\" must set something", 0), 0u) << e;
  e = CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    timeout: 0\n");
  EXPECT_EQ(e.rfind("recipe.yaml:13:14: \"cells[0].timeout\" must be between 1", 0), 0u) << e;
  e = CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    unrequested_archs: maybe\n");
  EXPECT_EQ(e.rfind("recipe.yaml:13:24: \"cells[0].unrequested_archs\" must be warn or fail", 0),
            0u)
      << e;
  e = CellsErrorOf("cells:\n  - timeout: 10\n");
  EXPECT_EQ(e.rfind("recipe.yaml:12:5: missing required field \"when\"", 0), 0u) << e;
}

TEST(ApplyCellSettingsTest, OnlyMatchingCellsGetTheirSettingsAndLaterEntriesWin) {
  farm::v1::Recipe r = ParseWithCells(R"(env: {CXXFLAGS: "-O2", KEEP: "1"}
timeout: 600
cells:
  - when: {torch: ">=2.10"}
    env: {CXXFLAGS: "-std=c++20"}
    timeout: 7200
  - when: {torch: ">=2.11", cuda: ">=13.0"}
    env: {CXXFLAGS: "-std=c++20 -DNEW"}
    unrequested_archs: fail
)");
  CellRecipe old = ApplyCellSettings(r, MakeCell("3.12", "2.9", "13.0"));
  EXPECT_EQ(old.recipe.env().at("CXXFLAGS"), "-O2");
  EXPECT_EQ(old.recipe.timeout_seconds(), 600);
  EXPECT_TRUE(old.applied.empty());

  CellRecipe mid = ApplyCellSettings(r, MakeCell("3.12", "2.10", "13.0"));
  EXPECT_EQ(mid.recipe.env().at("CXXFLAGS"), "-std=c++20");
  EXPECT_EQ(mid.recipe.env().at("KEEP"), "1");
  EXPECT_EQ(mid.recipe.timeout_seconds(), 7200);
  EXPECT_FALSE(mid.recipe.refuse_unrequested_archs());
  EXPECT_EQ(
      mid.applied,
      (Strings{"cells[0] at line 14 (torch >=2.10): env CXXFLAGS=-std=c++20, timeout 7200 s"}));

  CellRecipe both = ApplyCellSettings(r, MakeCell("3.12", "2.11", "13.0"));
  EXPECT_EQ(both.recipe.env().at("CXXFLAGS"), "-std=c++20 -DNEW");
  EXPECT_EQ(both.recipe.timeout_seconds(), 7200);
  EXPECT_TRUE(both.recipe.refuse_unrequested_archs());
  EXPECT_EQ(both.applied.size(), 2u);
  EXPECT_EQ(MatchingCellSettings(r, MakeCell("3.12", "2.11", "13.0")), both.applied);
  // Applied once: the result carries no entries to apply again.
  EXPECT_EQ(both.recipe.cell_settings_size(), 0);
  EXPECT_TRUE(ApplyCellSettings(both.recipe, MakeCell("3.12", "2.11", "13.0")).applied.empty());
}

// A recipe's value is hostile: in the job's log it stays on its own line and cannot pose
// as a line the worker wrote.
TEST(ApplyCellSettingsTest, DescriptionsEscapeControlCharactersAndCutLongValues) {
  farm::v1::Recipe r = ParseWithCells(
      "cells:\n  - when: {torch: \">=2.10\"}\n    env: {A: \"x\\nfarm: validation "
      "VALIDATION_PASSED\\r\\u001b[2J\"}\n");
  ASSERT_EQ(r.cell_settings_size(), 1);
  EXPECT_EQ(r.cell_settings(0).env().at("A"), "x\nfarm: validation VALIDATION_PASSED\r\x1b[2J");
  Strings lines = MatchingCellSettings(r, MakeCell("3.12", "2.10", "12.8"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "cells[0] at line 12 (torch >=2.10): env A=x\\x0afarm: validation "
            "VALIDATION_PASSED\\x0d\\x1b[2J");
  farm::v1::CellSettings big = r.cell_settings(0);
  (*big.mutable_env())["A"] = std::string(5000, 'v');
  EXPECT_EQ(DescribeCellSettings(big).size(),
            std::string("cells[0] at line 12 (torch >=2.10): env A=").size() + 200 + 3);
  // Cut at a character, never inside one: "é" is two bytes, the 200th and 201st here.
  (*big.mutable_env())["A"] = std::string(199, 'v') + "\xc3\xa9" + "tail";
  const std::string line = DescribeCellSettings(big);
  EXPECT_EQ(line.substr(line.size() - 6), "vvv...") << line;
  // More entries than any recipe needs.
  std::string many = "cells:\n";
  for (int i = 0; i < 65; ++i) many += "  - {when: {torch: \">=2.10\"}, timeout: 10}\n";
  EXPECT_NE(CellsErrorOf(many).find("\"cells\" has 65 entries; at most 64"), std::string::npos);
}

TEST(ApplyCellSettingsTest, BuildRequirementsReachTheCellEnvironmentOnce) {
  constexpr char kCellsProvisioned[] = R"(matrix:
  python: ["3.12"]
  torch: ["2.9", "2.10"]
  cuda: ["12.8"]
environment:
  torch: {"2.9": "2.9.1", "2.10": "2.10.0"}
  build_requirements: ["setuptools>=64"]
)";
  farm::v1::Recipe r = ParseWithCells(
      "cells:\n  - when: {torch: \">=2.10\"}\n    build_requirements: [\"ninja>=1.11\"]\n",
      kCellsProvisioned);
  farm::v1::MatrixCell old = MakeCell("3.12", "2.9", "12.8", "");
  farm::v1::MatrixCell fresh = MakeCell("3.12", "2.10", "12.8", "");
  auto requirements = [](const Result<farm::v1::ProvisionSpec>& spec) {
    EXPECT_OK(spec.status());
    return spec.ok() ? Strings(spec->requirements().begin(), spec->requirements().end())
                     : Strings{};
  };
  EXPECT_EQ(requirements(CellEnvironment(r, old)), Strings{"setuptools>=64"});
  const Strings both = {"setuptools>=64", "ninja>=1.11"};
  EXPECT_EQ(requirements(CellEnvironment(r, fresh)), both);
  // The leased recipe has them applied: its environment is the same, not doubled.
  EXPECT_EQ(requirements(CellEnvironment(ApplyCellSettings(r, fresh).recipe, fresh)), both);
  // The refusals: the project twice, torch, and a recipe that installs its own lock.
  std::string e =
      CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    build_requirements: [torch]\n",
                   kCellsProvisioned);
  EXPECT_NE(e.find("names torch"), std::string::npos) << e;
  e = CellsErrorOf("cells:\n  - when: {torch: \">=2.10\"}\n    build_requirements: [ninja]\n",
                   std::string(kCellsProvisioned) + "  lock: pylock.toml\n");
  EXPECT_NE(e.find("cannot apply: the cells install environment.lock"), std::string::npos) << e;
}

TEST(ExpandRecipeTest, ArchListChangesApplyToMatchingCellsAndAreCheckedAgain) {
  farm::v1::Recipe r =
      ParseWithCells("cells:\n  - when: {cuda: \">=13.0\"}\n    arch_list: \"7.5;9.0\"\n");
  MatrixExpansion e = ExpandRecipe({}, r);
  ASSERT_OK(e.status);
  for (const auto& c : e.cells) {
    EXPECT_EQ(c.arch_list(), c.cuda() == "13.0" ? "7.5;9.0" : "7.0;9.0") << DescribeCell(c);
  }
  EXPECT_EQ(e.cells.size(), 2u * 3 * 2 + 2);
  // A change the cell's CUDA cannot build is dropped with the reason and where it came from.
  farm::v1::Recipe bad =
      ParseWithCells("cells:\n  - when: {cuda: \"<13\"}\n    arch_list: \"12.1a\"\n");
  MatrixExpansion dropped = ExpandRecipe({}, bad);
  ASSERT_OK(dropped.status);
  for (const auto& c : dropped.cells) EXPECT_EQ(c.cuda(), "13.0") << DescribeCell(c);
  ASSERT_FALSE(dropped.rejected.empty());
  EXPECT_NE(dropped.rejected[0].find("(arch list 12.1a from cells[0] at line 12)"),
            std::string::npos)
      << dropped.rejected[0];
}

TEST(ExpandRecipeTest, CellsMadeEqualByAChangeAreKeptOnce) {
  constexpr char kCellsTwoLists[] = R"(matrix:
  python: ["3.12"]
  cuda: ["13.0"]
  arch_lists: ["8.0;9.0", "9.0;12.0"]
)";
  farm::v1::Recipe r = ParseWithCells(
      "cells:\n  - when: {cuda: \">=13.0\"}\n    arch_list: \"9.0\"\n", kCellsTwoLists);
  MatrixExpansion e = ExpandRecipe({}, r);
  ASSERT_EQ(e.cells.size(), 1u);
  EXPECT_EQ(e.cells[0].arch_list(), "9.0");
}

}  // namespace
}  // namespace farm::recipe
