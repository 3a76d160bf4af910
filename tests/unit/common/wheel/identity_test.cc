#include "common/wheel/identity.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace farm::wheel {
namespace {

farm::v1::MatrixCell Cell(const std::string& cuda, const std::string& torch,
                          const std::string& arch_list) {
  farm::v1::MatrixCell c;
  c.set_python("3.11"), c.set_cuda(cuda), c.set_torch(torch), c.set_arch_list(arch_list);
  c.set_platform("linux_x86_64");
  return c;
}

std::vector<arch::Image> Images(const farm::v1::MatrixCell& cell) {
  auto images = ExpectedImages(cell);
  EXPECT_OK(images.status());
  return images.ok() ? images.value() : std::vector<arch::Image>{};
}

TEST(IdentityTest, ArchLabelSortsByCapabilityWithSassBeforePtx) {
  auto cell = Cell("13.0", "", "12.1a;9.0;12.0a;8.6+PTX");
  EXPECT_EQ(ArchLabel(Images(cell)), "sm86.ptx86.sm90.sm120a.sm121a");
  EXPECT_EQ(ArchLabel({}), "");
  auto twice = Images(cell);
  twice.insert(twice.end(), twice.begin(), twice.end());
  EXPECT_EQ(ArchLabel(twice), "sm86.ptx86.sm90.sm120a.sm121a");
}

TEST(IdentityTest, DefaultLabelHoldsCudaTorchAndArch) {
  auto a = Cell("13.0", "", "9.0;12.0a;12.1a");
  auto b = Cell("13.0", "", "12.1a");
  auto c = Cell("12.8", "2.8", "9.0a");
  auto la = WheelLabel("", a, Images(a));
  auto lb = WheelLabel("", b, Images(b));
  auto lc = WheelLabel("", c, Images(c));
  ASSERT_OK(la.status());
  ASSERT_OK(lb.status());
  ASSERT_OK(lc.status());
  EXPECT_EQ(la.value(), "cu130.sm90.sm120a.sm121a");
  EXPECT_EQ(lb.value(), "cu130.sm121a");
  EXPECT_EQ(lc.value(), "cu128torch2.8.sm90a");
  // A cell without CUDA, torch or device code keeps the version as built.
  auto cpu = Cell("", "", "");
  EXPECT_EQ(WheelLabel("", cpu, {}).value(), "");
}

TEST(IdentityTest, TemplatesDropEmptySegmentsAndRefuseBadOnes) {
  auto cpu = Cell("13.0", "", "");
  EXPECT_EQ(WheelLabel("cu{cuda_nodot}.{arch}", cpu, {}).value(), "cu130");
  auto c = Cell("12.8", "2.11", "12.0a");
  EXPECT_EQ(WheelLabel("{arch}-torch{torch_nodot}", c, Images(c)).value(), "sm120a.torch211");
  EXPECT_EQ(WheelLabel("{nope}", c, Images(c)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WheelLabel("{arch", c, Images(c)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WheelLabel("a+b", c, Images(c)).status().code(), StatusCode::kInvalidArgument);
}

TEST(IdentityTest, CommitTellsApartBuildsOfOneUpstreamVersion) {
  farm::v1::Recipe recipe;
  recipe.mutable_source()->mutable_git()->set_commit("d1a57a546c3d395b1ffcbeecc66d81db76f3b4b5");
  recipe.mutable_publish()->set_local_version_template("{variant}.g{commit}");
  auto c = Cell("12.8", "2.8", "9.0a");
  EXPECT_EQ(RecipeWheelLabel(recipe, c, Images(c)).value(), "cu128torch2.8.sm90a.gd1a57a54");
  recipe.mutable_source()->Clear();  // no git: the empty segment is dropped
  recipe.mutable_publish()->set_local_version_template("{variant}.{commit}");
  EXPECT_EQ(RecipeWheelLabel(recipe, c, Images(c)).value(), "cu128torch2.8.sm90a");
}

// A release candidate's wheel says so in its name, whatever the template, so that it never
// takes the name of the final release's wheel of its cell.
TEST(IdentityTest, AReleaseCandidatesLabelSaysSo) {
  farm::v1::Recipe recipe;
  auto c = Cell("13.0", "2.12", "9.0a");
  EXPECT_EQ(RecipeWheelLabel(recipe, c, Images(c)).value(), "cu130torch2.12.sm90a");
  EXPECT_FALSE(IsTorchCandidate(recipe, "2.12"));
  recipe.mutable_environment()->add_torch_candidates("2.12");
  EXPECT_TRUE(IsTorchCandidate(recipe, "2.12"));
  EXPECT_FALSE(IsTorchCandidate(recipe, "2.11"));
  EXPECT_EQ(RecipeWheelLabel(recipe, c, Images(c)).value(), "cu130torch2.12rc.sm90a");
  recipe.mutable_publish()->set_local_version_template("cu{cuda_nodot}.torch{torch_nodot}");
  EXPECT_EQ(RecipeWheelLabel(recipe, c, Images(c)).value(), "cu130.torch212rc");
  // A template that names no torch still gets the candidate's mark.
  recipe.mutable_publish()->set_local_version_template("cu{cuda_nodot}.{arch}");
  EXPECT_EQ(RecipeWheelLabel(recipe, c, Images(c)).value(), "cu130.sm90a.torch2.12rc");
  recipe.mutable_publish()->set_local_version_template("");
  EXPECT_EQ(RecipeWheelLabel(recipe, Cell("13.0", "2.11", "9.0a"), Images(c)).value(),
            "cu130torch2.11.sm90a");
}

TEST(IdentityTest, ManifestImagesAndLocalLabels) {
  farm::v1::ArchManifest m;
  for (const char* name : {"sm_121a", "sm_90", "sm_121a", "compute_120"}) {
    m.add_images()->set_arch(name);
  }
  auto images = ManifestImages(m);
  ASSERT_OK(images.status());
  EXPECT_EQ(images->size(), 3u);
  EXPECT_EQ(ArchLabel(*images), "sm90.ptx120.sm121a");
  m.add_images()->set_arch("sm_x");
  EXPECT_FALSE(ManifestImages(m).ok());
  EXPECT_EQ(LocalLabelOf("0.1.0+cu130.sm90"), "cu130.sm90");
  EXPECT_EQ(LocalLabelOf("0.1.0"), "");
}

}  // namespace
}  // namespace farm::wheel
