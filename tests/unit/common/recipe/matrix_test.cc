#include "common/recipe/matrix.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

using Strings = std::vector<std::string>;

void Fill(google::protobuf::RepeatedPtrField<std::string>* field, const Strings& values) {
  for (const std::string& v : values) field->Add(std::string(v));
}

farm::v1::MatrixRule Rule(std::initializer_list<std::pair<std::string, std::string>> kv) {
  farm::v1::MatrixRule rule;
  for (const auto& [k, v] : kv) (*rule.mutable_match())[k] = v;
  return rule;
}

farm::v1::MatrixAxes Axes(const Strings& python, const Strings& torch, const Strings& cuda,
                          const Strings& arch_lists, const Strings& platform = {}) {
  farm::v1::MatrixAxes m;
  Fill(m.mutable_python(), python);
  Fill(m.mutable_torch(), torch);
  Fill(m.mutable_cuda(), cuda);
  Fill(m.mutable_arch_lists(), arch_lists);
  Fill(m.mutable_platform(), platform);
  return m;
}

Strings Cells(const MatrixExpansion& e) {
  Strings out;
  for (const auto& c : e.cells) out.push_back(DescribeCell(c));
  return out;
}

TEST(ExpandMatrixTest, CartesianProductInAxisOrder) {
  farm::v1::MatrixAxes m = Axes({"3.11", "3.12"}, {}, {"12.8", "13.0"}, {"9.0"}, {"linux_x86_64"});
  MatrixExpansion e = ExpandMatrix(m, m);
  ASSERT_OK(e.status);
  EXPECT_EQ(Cells(e), (Strings{
                          "python=3.11 cuda=12.8 arch_list=9.0 platform=linux_x86_64",
                          "python=3.11 cuda=13.0 arch_list=9.0 platform=linux_x86_64",
                          "python=3.12 cuda=12.8 arch_list=9.0 platform=linux_x86_64",
                          "python=3.12 cuda=13.0 arch_list=9.0 platform=linux_x86_64",
                      }));
  EXPECT_TRUE(e.rejected.empty());
  EXPECT_EQ(e.cells[0].torch(), "");
}

TEST(ExpandMatrixTest, EmptyMatrixIsOneEmptyCell) {
  MatrixExpansion e = ExpandMatrix({}, {});
  ASSERT_OK(e.status);
  ASSERT_EQ(e.cells.size(), 1u);
  EXPECT_EQ(DescribeCell(e.cells[0]), "(empty cell)");
}

TEST(ExpandMatrixTest, ArchVersusCudaRejectionsCarryTheReason) {
  farm::v1::MatrixAxes m = Axes({"3.11"}, {}, {"12.8", "13.0"}, {"9.0;12.0a;12.1a"});
  MatrixExpansion e = ExpandMatrix(m, m);
  ASSERT_OK(e.status);
  EXPECT_EQ(Cells(e), (Strings{"python=3.11 cuda=13.0 arch_list=9.0;12.0a;12.1a"}));
  EXPECT_EQ(
      e.rejected,
      (Strings{"python=3.11 cuda=12.8 arch_list=9.0;12.0a;12.1a: sm_121a needs CUDA >= 12.9"}));
  m = Axes({"3.11"}, {}, {"12.8"}, {"12.1a"});
  e = ExpandMatrix(m, m);
  EXPECT_TRUE(e.cells.empty());
  EXPECT_EQ(e.rejected,
            (Strings{"python=3.11 cuda=12.8 arch_list=12.1a: sm_121a needs CUDA >= 12.9"}));
  m = Axes({}, {}, {"13.0"}, {"7.0;8.0"});
  e = ExpandMatrix(m, m);
  EXPECT_EQ(e.rejected, (Strings{"cuda=13.0 arch_list=7.0;8.0: sm_70 is not supported by CUDA "
                                 "13.0 (CUDA 13.0 dropped sm_50..sm_72)"}));
}

TEST(ExpandMatrixTest, TorchCudaPairsFollowTheTable) {
  farm::v1::MatrixAxes m = Axes({"3.12"}, {"2.6", "2.9"}, {"12.4", "13.0"}, {});
  MatrixExpansion e = ExpandMatrix(m, m);
  EXPECT_EQ(Cells(e),
            (Strings{"python=3.12 torch=2.6 cuda=12.4", "python=3.12 torch=2.9 cuda=13.0"}));
  EXPECT_EQ(e.rejected,
            (Strings{"python=3.12 torch=2.6 cuda=13.0: torch 2.6 is not released for CUDA 13.0 "
                     "(torch 2.6 ships for CUDA 11.8, 12.4, 12.6) (a private torch build for "
                     "it: matrix.torch_cuda)",
                     "python=3.12 torch=2.9 cuda=12.4: torch 2.9 is not released for CUDA 12.4 "
                     "(torch 2.9 ships for CUDA 12.6, 12.8, 13.0) (a private torch build for "
                     "it: matrix.torch_cuda)"}));
  // A private torch build: the recipe names the pair, and the cell is built.
  farm::v1::CudaVersions extra;
  extra.add_cuda("13.0");
  (*m.mutable_torch_cuda())["2.6"] = extra;
  e = ExpandMatrix(m, m);
  EXPECT_EQ(Cells(e), (Strings{"python=3.12 torch=2.6 cuda=12.4", "python=3.12 torch=2.6 cuda=13.0",
                               "python=3.12 torch=2.9 cuda=13.0"}));
  EXPECT_EQ(e.rejected.size(), 1u);
}

TEST(ExpandMatrixTest, ExcludesRemoveMatchingCells) {
  farm::v1::MatrixAxes m = Axes({"3.11", "3.12"}, {}, {"12.8", "13.0"}, {"9.0", "12.0a"});
  *m.add_exclude() = Rule({{"cuda", "12.8"}, {"arch_lists", "12.0a"}});
  *m.add_exclude() = Rule({{"python", "3.11"}, {"cuda", "13.0"}});
  MatrixExpansion e = ExpandMatrix(m, m);
  EXPECT_EQ(
      Cells(e),
      (Strings{"python=3.11 cuda=12.8 arch_list=9.0", "python=3.12 cuda=12.8 arch_list=9.0",
               "python=3.12 cuda=13.0 arch_list=9.0", "python=3.12 cuda=13.0 arch_list=12.0a"}));
  EXPECT_TRUE(e.rejected.empty());
}

TEST(ExpandMatrixTest, IncludeExtendsMatchingCellsWithEmptyAxes) {
  farm::v1::MatrixAxes m = Axes({"3.11", "3.12"}, {}, {"12.8"}, {});
  *m.add_include() = Rule({{"python", "3.12"}, {"torch", "2.8"}});
  MatrixExpansion e = ExpandMatrix(m, m);
  EXPECT_EQ(Cells(e), (Strings{"python=3.11 cuda=12.8", "python=3.12 torch=2.8 cuda=12.8"}));
}

TEST(ExpandMatrixTest, IncludeThatMatchesNothingAddsCells) {
  farm::v1::MatrixAxes m = Axes({"3.11"}, {}, {"13.0"}, {"9.0", "12.0"});
  *m.add_include() = Rule({{"python", "3.12"}, {"cuda", "12.8"}});
  *m.add_exclude() = Rule({{"python", "3.11"}, {"arch_lists", "12.0"}});
  MatrixExpansion e = ExpandMatrix(m, m);
  // The new cells take every arch list, even one an exclude removed elsewhere: includes
  // are applied after excludes.
  EXPECT_EQ(Cells(e),
            (Strings{"python=3.11 cuda=13.0 arch_list=9.0", "python=3.12 cuda=12.8 arch_list=9.0",
                     "python=3.12 cuda=12.8 arch_list=12.0"}));
}

TEST(ExpandMatrixTest, DuplicatesAreRemovedKeepingTheFirst) {
  farm::v1::MatrixAxes m = Axes({"3.11", "3.11"}, {}, {"13.0"}, {"9.0"});
  *m.add_include() = Rule({{"python", "3.11"}, {"cuda", "13.0"}, {"arch_list", "9.0"}});
  *m.add_include() = Rule({{"python", "3.12"}, {"cuda", "13.0"}});
  *m.add_include() = Rule({{"cuda", "13.0"}, {"python", "3.12"}});
  MatrixExpansion e = ExpandMatrix(m, m);
  EXPECT_EQ(Cells(e), (Strings{"python=3.11 cuda=13.0 arch_list=9.0",
                               "python=3.12 cuda=13.0 arch_list=9.0"}));
}

TEST(ExpandMatrixTest, ARequestedArchListMayBeASubsetOfTheRecipes) {
  farm::v1::MatrixAxes supported = Axes({"3.11"}, {}, {"13.0"}, {"9.0;12.0a;12.1a"});
  for (const char* arch : {"12.1a", "9.0", "12.1a;9.0", "9.0;12.0a;12.1a"}) {
    MatrixExpansion e = ExpandRequest(Axes({}, {}, {}, {arch}), supported);
    EXPECT_EQ(Cells(e), (Strings{std::string("python=3.11 cuda=13.0 arch_list=") + arch}));
    EXPECT_TRUE(e.rejected.empty()) << e.rejected[0];
  }
  MatrixExpansion e = ExpandRequest(Axes({}, {}, {}, {"8.9"}), supported);
  EXPECT_TRUE(e.cells.empty());
  EXPECT_EQ(e.rejected, (Strings{"arch_list=8.9: the recipe supports arch_lists 9.0;12.0a;12.1a "
                                 "(a list of any of their targets works too: 9.0, 12.0a, "
                                 "12.1a); to build 8.9, add it to the recipe's "
                                 "matrix.arch_lists"}));
  EXPECT_EQ(CheckBuildable(e).message(),
            "the matrix has no buildable cell:\n" + e.rejected[0] + "\n");
  e = ExpandRequest(Axes({}, {}, {}, {"12.1;9.0+PTX"}), supported);
  ASSERT_EQ(e.rejected.size(), 1u);
  EXPECT_NE(e.rejected[0].find("; 12.1 is built as 12.1a, 9.0+PTX is built as 9.0"),
            std::string::npos)
      << e.rejected[0];
  // No request: the recipe's own matrix.
  EXPECT_EQ(ExpandRequest({}, supported).cells.size(), 1u);
  EXPECT_TRUE(CheckBuildable(ExpandRequest({}, supported)).ok());
}

TEST(ExpandMatrixTest, RequestedAxesNarrowWithinTheRecipe) {
  farm::v1::MatrixAxes supported = Axes({"3.11", "3.12"}, {}, {"12.8", "13.0"}, {"9.0"});
  farm::v1::MatrixAxes requested = Axes({"3.12", "3.13"}, {}, {}, {});
  MatrixExpansion e = ExpandMatrix(requested, supported);
  EXPECT_EQ(Cells(e), (Strings{"python=3.12 cuda=12.8 arch_list=9.0",
                               "python=3.12 cuda=13.0 arch_list=9.0"}));
  EXPECT_EQ(e.rejected, (Strings{"python=3.13: the recipe supports python 3.11, 3.12"}));
  requested = Axes({"3.13"}, {}, {}, {});
  e = ExpandMatrix(requested, supported);
  EXPECT_TRUE(e.cells.empty());
  EXPECT_EQ(e.rejected, (Strings{"python=3.13: the recipe supports python 3.11, 3.12"}));
  // An axis the recipe does not list accepts any well-formed requested value.
  requested = Axes({}, {}, {}, {}, {"linux_aarch64"});
  e = ExpandMatrix(requested, supported);
  EXPECT_EQ(e.cells.size(), 4u);
  EXPECT_EQ(e.cells[0].platform(), "linux_aarch64");
}

TEST(ExpandMatrixTest, RecipeIncludesStayInsideANarrowedRequest) {
  farm::v1::MatrixAxes supported = Axes({"3.11"}, {}, {"12.8", "13.0"}, {"9.0"});
  *supported.add_include() = Rule({{"python", "3.12"}, {"cuda", "12.8"}});
  MatrixExpansion e = ExpandMatrix(Axes({}, {}, {"13.0"}, {}), supported);
  EXPECT_EQ(Cells(e), (Strings{"python=3.11 cuda=13.0 arch_list=9.0"}));
  EXPECT_EQ(e.rejected,
            (Strings{"python=3.12 cuda=12.8: include is outside the requested cuda values"}));
}

TEST(ExpandMatrixTest, MalformedRequestedValuesAreRejected) {
  farm::v1::MatrixAxes requested = Axes({}, {}, {"13.0"}, {"9.0;9.x", "12.0"});
  MatrixExpansion e = ExpandMatrix(requested, {});
  EXPECT_EQ(Cells(e), (Strings{"cuda=13.0 arch_list=12.0"}));
  ASSERT_EQ(e.rejected.size(), 1u);
  EXPECT_EQ(e.rejected[0].substr(0, 50), "arch_list=9.0;9.x: invalid arch list entry \"9.x\" i");
}

TEST(ExpandMatrixTest, BadRulesAndHugeMatricesAreErrors) {
  farm::v1::MatrixAxes m = Axes({"3.11"}, {}, {}, {});
  *m.add_exclude() = Rule({{"pyton", "3.11"}});
  MatrixExpansion e = ExpandMatrix(m, m);
  EXPECT_FALSE(e.status.ok());
  EXPECT_TRUE(e.cells.empty());
  EXPECT_EQ(e.status.message(),
            "matrix.exclude[0]: unknown axis \"pyton\" (expected one of: "
            "python, torch, cuda, arch_lists, platform)");
  EXPECT_EQ(e.rejected.back(), e.status.message());

  Strings many;
  for (int i = 0; i < 11; ++i) many.push_back("3." + std::to_string(i));
  Strings platforms;
  for (int i = 0; i < 10; ++i) platforms.push_back("plat_" + std::to_string(i));
  m = Axes(many, {}, {"12.8", "12.9", "13.0"}, {"9.0", "8.0", "12.0"}, platforms);
  e = ExpandMatrix(m, m);  // 11 * 3 * 3 * 10 = 990 cells: allowed
  ASSERT_OK(e.status);
  EXPECT_EQ(e.cells.size(), 990u);
  Fill(m.mutable_platform(), {"plat_x"});  // 1089 cells
  e = ExpandMatrix(m, m);
  EXPECT_EQ(e.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status.message(), "the matrix has more than 1000 cells; narrow its axes");
  EXPECT_TRUE(e.cells.empty());
}

TEST(VersionLessTest, ReleasesSortByNumberNotText) {
  EXPECT_TRUE(VersionLess("2.8", "2.10"));
  EXPECT_FALSE(VersionLess("2.10", "2.8"));
  EXPECT_TRUE(VersionLess("3.9", "3.11"));
  EXPECT_TRUE(VersionLess("2.9", "2.9.1"));
  EXPECT_TRUE(VersionLess("12.8", "13.0"));
  EXPECT_TRUE(VersionLess("", "2.8"));
  EXPECT_FALSE(VersionLess("2.8", "2.8"));
  EXPECT_FALSE(VersionLess("2.08", "2.8"));
  EXPECT_TRUE(VersionLess("9.0;12.0a", "12.0a"));
  EXPECT_TRUE(VersionLess("linux_aarch64", "linux_x86_64"));
}

TEST(CheckAxisValueTest, FormsPerAxis) {
  EXPECT_OK(CheckAxisValue("python", "3.11"));
  EXPECT_FALSE(CheckAxisValue("python", "3.11.2").ok());
  EXPECT_OK(CheckAxisValue("torch", "2.8.0"));
  EXPECT_OK(CheckAxisValue("torch", ""));
  EXPECT_FALSE(CheckAxisValue("cuda", "").ok());
  EXPECT_OK(CheckAxisValue("arch_lists", "9.0a 12.0+PTX;12.1a"));
  // The build gets the list verbatim as TORCH_CUDA_ARCH_LIST: nvcc's spellings, which torch
  // does not read, are refused with the one to write, and so is an entry given twice.
  EXPECT_EQ(CheckAxisValue("arch_lists", "sm_90").message(),
            "arch list entry \"sm_90\" is nvcc's spelling; TORCH_CUDA_ARCH_LIST, which the "
            "build gets verbatim, reads MAJOR.MINOR[a|f][+PTX] (write \"9.0\")");
  EXPECT_EQ(CheckAxisValue("arch_lists", "12.0;sm_90a").message().substr(0, 45),
            "arch list entry \"sm_90a\" is nvcc's spelling; ");
  EXPECT_FALSE(CheckAxisValue("arch_lists", "compute_120").ok());
  EXPECT_EQ(CheckAxisValue("arch_lists", "12.1a;9.0;12.1a").message(),
            "arch list entry \"12.1a\" is given twice in \"12.1a;9.0;12.1a\"");
  EXPECT_EQ(CheckAxisValue("colour", "red").message(), "unknown axis \"colour\"");
  EXPECT_EQ(CanonicalAxis("arch_list"), "arch_lists");
  EXPECT_EQ(CanonicalAxis("archs"), "");
}

}  // namespace
}  // namespace farm::recipe
