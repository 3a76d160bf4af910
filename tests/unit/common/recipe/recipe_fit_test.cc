#include "common/recipe/recipe_fit.h"

#include <gtest/gtest.h>

#include <string>

#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/wheel/fatbin_compression.h"
#include "common/wheel/identity.h"
#include "common/wheel/sm_families.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

std::string RecipeWith(const std::string& lines) {
  return "name: fit\nsource: {local: src}\nbuild: make\n" + lines;
}

std::string FitErrorOf(const std::string& yaml) {
  auto r = ParseRecipe(yaml, "r.yaml");
  return r.ok() ? "OK" : r.status().message();
}

TEST(ParseByteSizeTest, ReadsBinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseByteSize("12345"), 12345);
  EXPECT_EQ(*ParseByteSize("100 MiB"), 100 << 20);
  EXPECT_EQ(*ParseByteSize("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("1.5 GB"), 1'500'000'000);
  EXPECT_EQ(*ParseByteSize("500kb"), 500'000);
  EXPECT_EQ(*ParseByteSize("64 KiB"), 65536);
  for (const char* bad : {"", "MiB", "12 parsecs", "-5 MiB", "0", "1e3", "2 PiB", "0.1 B"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
}

TEST(RecipeFitTest, SizeBudgetAndCompressionAreRead) {
  auto r = ParseRecipe(RecipeWith("size_budget: 100 MiB\nfatbin_compression: size\n"), "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->size_budget_bytes(), 100 << 20);
  EXPECT_EQ(r->fatbin_compression(), "size");
  auto plain = ParseRecipe(RecipeWith(""), "r.yaml");
  ASSERT_OK(plain.status());
  EXPECT_EQ(plain->size_budget_bytes(), 0);
  EXPECT_EQ(plain->fatbin_compression(), "");
}

TEST(RecipeFitTest, BadValuesNameTheirPlace) {
  EXPECT_EQ(FitErrorOf(RecipeWith("size_budget: lots\n")),
            "r.yaml:4:14: \"size_budget\": \"lots\" is not a size such as \"100 MiB\", \"2 GiB\" "
            "or \"500 MB\"");
  EXPECT_NE(FitErrorOf(RecipeWith("fatbin_compression: tiny\n"))
                .find("\"fatbin_compression\" must be size, balance, speed or none"),
            std::string::npos);
}

TEST(FatbinCompressionFlagTest, OnlyForToolkitsThatHaveIt) {
  EXPECT_EQ(wheel::FatbinCompressionFlag("size", "13.0"), "--compress-mode=size");
  EXPECT_EQ(wheel::FatbinCompressionFlag("size", "12.8"), "--compress-mode=size");
  EXPECT_EQ(wheel::FatbinCompressionFlag("balance", "12.9"), "--compress-mode=balance");
  EXPECT_EQ(wheel::FatbinCompressionFlag("size", "12.6"), "");
  EXPECT_EQ(wheel::FatbinCompressionFlag("size", ""), "");
  EXPECT_EQ(wheel::FatbinCompressionFlag("", "13.0"), "");
}

TEST(SmFamilyTest, ParsesRangesAndRefusesNonsense) {
  auto f = wheel::ParseFamily("sm80-89");
  ASSERT_OK(f.status());
  EXPECT_EQ(f->lo, (arch::Version{8, 0}));
  EXPECT_EQ(f->hi, (arch::Version{8, 9}));
  EXPECT_EQ(f->Label(), "sm80to89");
  EXPECT_EQ(wheel::ParseFamily("sm90")->Label(), "sm90");
  EXPECT_EQ(wheel::ParseFamily("sm100-103")->hi, (arch::Version{10, 3}));
  for (const char* bad : {"80-89", "sm8", "sm89-80", "sm85", "sm90-x", "sm120-", "smXY"}) {
    EXPECT_FALSE(wheel::ParseFamily(bad).ok()) << bad;
  }
  google::protobuf::RepeatedPtrField<std::string> overlap;
  *overlap.Add() = "sm80-89";
  *overlap.Add() = "sm86-90";
  EXPECT_FALSE(wheel::ParseFamilies(overlap).ok());
}

constexpr char kFamilies[] = R"(matrix:
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["8.0;8.6;8.9;9.0a;10.0a;10.3a;12.0;12.1+PTX"]
  families: [sm80-89, sm90, sm100-103, sm120-121]
)";

TEST(FamiliesTest, OneArchListPlansOneCellPerFamily) {
  auto r = ParseRecipe(RecipeWith(kFamilies), "r.yaml");
  ASSERT_OK(r.status());
  MatrixExpansion e = ExpandRequest({}, r->matrix());
  ASSERT_OK(e.status);
  std::vector<std::string> lists;
  for (const auto& c : e.cells) lists.push_back(c.arch_list());
  EXPECT_EQ(lists,
            (std::vector<std::string>{"8.0;8.6;8.9", "9.0a", "10.0a;10.3a", "12.0;12.1+PTX"}));
  // A request for part of the list plans the families it touches.
  farm::v1::MatrixAxes request;
  request.add_arch_lists("8.6;12.0");
  MatrixExpansion part = ExpandRequest(request, r->matrix());
  ASSERT_EQ(part.cells.size(), 2u) << part.rejected.front();
  EXPECT_EQ(part.cells[0].arch_list(), "8.6");
  EXPECT_EQ(part.cells[1].arch_list(), "12.0");
}

TEST(FamiliesTest, AnArchListWithATargetInNoFamilyIsRefusedAtParse) {
  std::string yaml = RecipeWith(R"(matrix:
  arch_lists: ["8.0;9.0a"]
  families: [sm80-89]
)");
  EXPECT_NE(FitErrorOf(yaml).find("sm_90a of \"8.0;9.0a\" is in none of the families sm80-89"),
            std::string::npos)
      << FitErrorOf(yaml);
  EXPECT_NE(FitErrorOf(RecipeWith("matrix:\n  families: [sm80-89, sm86]\n")).find("share"),
            std::string::npos);
}

TEST(FamiliesTest, AFamilyWheelIsLabelledByItsFamilyOnlyWhenItsImagesServeIt) {
  auto r = ParseRecipe(RecipeWith(kFamilies), "r.yaml");
  ASSERT_OK(r.status());
  farm::v1::MatrixCell cell;
  cell.set_cuda("13.0");
  auto label = [&](std::initializer_list<const char*> names) {
    std::vector<arch::Image> images;
    for (const char* n : names) images.push_back(*arch::ParseImage(n));
    return *wheel::RecipeWheelLabel(*r, cell, images);
  };
  EXPECT_EQ(label({"sm_80", "sm_86", "sm_89"}), "cu130.sm80to89");
  EXPECT_EQ(label({"sm_90a"}), "cu130.sm90");
  EXPECT_EQ(label({"sm_100a", "sm_103a"}), "cu130.sm100to103");
  EXPECT_EQ(label({"sm_120", "compute_121"}), "cu130.sm120to121");
  // sm_100a alone does not load on 10.3: the images name the wheel.
  EXPECT_EQ(label({"sm_100a"}), "cu130.sm100a");
  // A package that ignored the list and built across families.
  EXPECT_EQ(label({"sm_80", "sm_90"}), "cu130.sm80.sm90");
}

}  // namespace
}  // namespace farm::recipe
