#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/fs.h"
#include "common/recipe/recipe.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

namespace stdfs = std::filesystem;

class LoadRecipeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path();
    ASSERT_OK(fs::MakeDirs(root_ + "/recipes/patches"));
    ASSERT_OK(fs::MakeDirs(root_ + "/src"));
    ASSERT_OK(fs::WriteFileAtomic(root_ + "/recipes/patches/fix.diff", "--- a/x\n+++ b/x\n"));
  }
  std::string Write(const std::string& yaml) {
    std::string path = root_ + "/recipes/recipe.yaml";
    EXPECT_OK(fs::WriteFileAtomic(path, yaml));
    return path;
  }

  farm::testing::ScopedTempDir tmp_;
  std::string root_;
};

TEST_F(LoadRecipeFileTest, ResolvesSourceAndReadsPatches) {
  std::string path =
      Write("name: a\nbuild: b\nsource: {local: ../src}\npatches: [patches/fix.diff]\n");
  Result<LoadedRecipe> r = LoadRecipeFile(path);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->path, path);
  EXPECT_EQ(r->directory, root_ + "/recipes");
  EXPECT_EQ(r->recipe.source().local_path(), root_ + "/src");
  ASSERT_EQ(r->recipe.patches_size(), 1);
  EXPECT_EQ(r->recipe.patches(0).name(), "patches/fix.diff");
  EXPECT_EQ(r->recipe.patches(0).content(), "--- a/x\n+++ b/x\n");
  EXPECT_NE(r->recipe.yaml().find("patches/fix.diff"), std::string::npos);
}

TEST_F(LoadRecipeFileTest, RelativeRecipePathIsMadeAbsolute) {
  Write("name: a\nbuild: b\nsource: {local: ../src}\n");
  std::error_code ec;
  stdfs::path old = stdfs::current_path();
  stdfs::current_path(root_, ec);
  ASSERT_FALSE(ec);
  Result<LoadedRecipe> r = LoadRecipeFile("recipes/recipe.yaml");
  stdfs::current_path(old, ec);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->recipe.source().local_path(), root_ + "/src");
}

TEST_F(LoadRecipeFileTest, MissingPatchIsNamedWithItsPosition) {
  std::string path =
      Write("name: a\nbuild: b\nsource: {local: ../src}\npatches: [patches/fix.diff, gone.diff]\n");
  Result<LoadedRecipe> r = LoadRecipeFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ":4:29: patch file \"gone.diff\" not found (looked for " +
                                      root_ + "/recipes/gone.diff)");
}

TEST_F(LoadRecipeFileTest, EmptyPatchAndMissingSourceAreRejected) {
  ASSERT_OK(fs::WriteFileAtomic(root_ + "/recipes/empty.diff", ""));
  std::string path = Write("name: a\nbuild: b\nsource: {local: ../src}\npatches: [empty.diff]\n");
  EXPECT_EQ(LoadRecipeFile(path).status().message(),
            path + ":4:11: patch file \"empty.diff\" is empty");
  path = Write("name: a\nbuild: b\nsource: {tarball: ../pkg.tar.gz}\n");
  EXPECT_EQ(LoadRecipeFile(path).status().message(),
            path + ":3:19: source tarball \"../pkg.tar.gz\" not found (looked for " + root_ +
                "/pkg.tar.gz)");
  path = Write("name: a\nbuild: b\nsource: {local: nowhere}\n");
  EXPECT_EQ(LoadRecipeFile(path).status().message(),
            path + ":3:17: source directory \"nowhere\" not found (looked for " + root_ +
                "/recipes/nowhere)");
}

TEST_F(LoadRecipeFileTest, MissingRecipeIsNotFound) {
  Result<LoadedRecipe> r = LoadRecipeFile(root_ + "/nope.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope.yaml"), std::string::npos);
}

TEST_F(LoadRecipeFileTest, GitSourceIsLeftAlone) {
  std::string path =
      Write("name: a\nbuild: b\nsource:\n  git: {url: https://h/x.git, ref: main}\n");
  Result<LoadedRecipe> r = LoadRecipeFile(path);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->recipe.source().git().url(), "https://h/x.git");
}

farm::v1::Patch P(const std::string& name, const std::string& content) {
  farm::v1::Patch p;
  p.set_name(name);
  p.set_content(content);
  return p;
}

TEST(AttachPatchesTest, FillsNamedPatchesAndRefusesGapsAndExtras) {
  Result<farm::v1::Recipe> parsed =
      ParseRecipe("name: a\nbuild: b\nsource: {local: s}\npatches: [a.diff, b.diff]\n", "r.yaml");
  ASSERT_OK(parsed.status());
  google::protobuf::RepeatedPtrField<farm::v1::Patch> supplied;
  *supplied.Add() = P("b.diff", "B");
  *supplied.Add() = P("a.diff", "A");
  farm::v1::Recipe recipe = parsed.value();
  ASSERT_OK(AttachPatches(&recipe, supplied));
  EXPECT_EQ(recipe.patches(0).content(), "A");
  EXPECT_EQ(recipe.patches(1).content(), "B");

  recipe = parsed.value();
  supplied.RemoveLast();
  EXPECT_EQ(AttachPatches(&recipe, supplied).message(),
            "patch \"a.diff\" named by the recipe was not supplied");
  *supplied.Add() = P("a.diff", "A");
  *supplied.Add() = P("c.diff", "C");
  recipe = parsed.value();
  EXPECT_EQ(AttachPatches(&recipe, supplied).message(),
            "patch \"c.diff\" was supplied but the recipe does not name it");
  supplied.RemoveLast();
  *supplied.Add() = P("a.diff", "again");
  recipe = parsed.value();
  EXPECT_EQ(AttachPatches(&recipe, supplied).message(), "patch \"a.diff\" was supplied twice");
  google::protobuf::RepeatedPtrField<farm::v1::Patch> empty_one;
  *empty_one.Add() = P("a.diff", "");
  *empty_one.Add() = P("b.diff", "B");
  recipe = parsed.value();
  EXPECT_EQ(AttachPatches(&recipe, empty_one).message(), "patch \"a.diff\" is empty");
}

}  // namespace
}  // namespace farm::recipe
