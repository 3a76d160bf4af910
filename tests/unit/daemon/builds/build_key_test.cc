#include "daemon/builds/build_key.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace farm::builds {
namespace {

farm::v1::MatrixCell Cell() {
  farm::v1::MatrixCell c;
  c.set_python("3.12");
  c.set_torch("2.8");
  c.set_cuda("12.8");
  c.set_arch_list("9.0;12.0a");
  c.set_platform("linux_x86_64");
  return c;
}

// One job's inputs, each changed by a test in turn.
struct Inputs {
  Inputs() {
    recipe.set_yaml("name: attn\n");
    recipe.add_patches()->set_content("--- a\n+++ b\n");
  }
  std::string Key() const { return BuildKey({recipe, source, cell, validate_in}); }

  farm::v1::Recipe recipe;
  std::string source = "git:https://example.org/attn@" + std::string(40, 'a');
  farm::v1::MatrixCell cell = Cell();
  google::protobuf::RepeatedPtrField<farm::v1::MatrixCell> validate_in;
};

TEST(BuildKeyTest, EveryInputChangesTheKey) {
  const std::string base = Inputs().Key();
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(Inputs().Key(), base);
  auto changed = [&](auto mutate) {
    Inputs copy;
    mutate(&copy);
    return copy.Key() != base;
  };
  EXPECT_TRUE(changed([](Inputs* t) { t->recipe.set_build_command("make"); }));
  EXPECT_TRUE(changed([](Inputs* t) { t->recipe.mutable_patches(0)->set_content("x"); }));
  EXPECT_TRUE(changed([](Inputs* t) { t->source += "b"; }));
  EXPECT_TRUE(changed([](Inputs* t) { t->cell.set_python("3.11"); }));
  EXPECT_TRUE(changed([](Inputs* t) { t->cell.set_torch("2.9"); }));
  EXPECT_TRUE(changed([](Inputs* t) { t->cell.set_cuda("13.0"); }));
  EXPECT_TRUE(changed([](Inputs* t) { t->cell.set_arch_list("9.0"); }));
  EXPECT_TRUE(changed([](Inputs* t) { t->cell.set_platform("linux_aarch64"); }));
  EXPECT_TRUE(changed([](Inputs* t) { *t->validate_in.Add() = Cell(); }));
  // A followed torch axis: the release pinned at submit is an input.
  auto followed = [](const std::string& release) {
    Inputs t;
    t.recipe.mutable_matrix()->mutable_torch_follow();
    (*t.recipe.mutable_environment()->mutable_torch())["2.8"] = release;
    return t.Key();
  };
  EXPECT_NE(followed("2.8.0"), followed("2.8.1"));
  EXPECT_NE(followed("2.8.0"), base);
}

TEST(BuildKeyTest, AnUnknownSourceGivesNoKey) {
  Inputs t;
  t.source.clear();
  EXPECT_EQ(t.Key(), "");
}

TEST(BuildKeyTest, TheTextIsNotAnInputButWhatItSaysIs) {
  const std::string base = Inputs().Key();
  auto same = [&](auto mutate) {
    Inputs copy;
    mutate(&copy);
    return copy.Key() == base;
  };
  // A comment, the layout, the other cells, where the wheels go and how failures are
  // retried change no cell's build.
  EXPECT_TRUE(same([](Inputs* t) { t->recipe.set_yaml("# a comment\nname:  attn\n"); }));
  EXPECT_TRUE(same([](Inputs* t) { t->recipe.mutable_matrix()->add_python("3.13"); }));
  EXPECT_TRUE(same([](Inputs* t) { t->recipe.mutable_retry()->set_max_attempts(9); }));
  EXPECT_TRUE(same([](Inputs* t) { t->recipe.mutable_publish()->set_github_repo("owner/name"); }));
  // How the build runs and what it is proven with do.
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.set_build_command("make wheel"); }));
  EXPECT_FALSE(same([](Inputs* t) { (*t->recipe.mutable_env())["CC"] = "clang"; }));
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.set_subdirectory("python"); }));
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.set_version("1.1"); }));
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.set_network(true); }));
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.set_timeout_seconds(60); }));
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.mutable_validation()->set_script("import x\n"); }));
  EXPECT_FALSE(same([](Inputs* t) { t->recipe.mutable_torch_abi()->set_exact_pin(true); }));
  EXPECT_FALSE(same(
      [](Inputs* t) { t->recipe.mutable_environment()->add_build_requirements("ninja==1.11.1"); }));
}

TEST(BuildKeyTest, AnotherTorchsEnvironmentIsNotThisCellsInput) {
  auto key = [](const std::string& pin_28, const std::string& pin_29, const std::string& nv_29) {
    Inputs t;  // the cell builds with torch 2.8
    auto* env = t.recipe.mutable_environment();
    (*env->mutable_torch())["2.8"] = pin_28;
    (*env->mutable_torch())["2.9"] = pin_29;
    (*env->mutable_torch_requirements())["2.8.0+cu128"].add_pins("nvidia-nccl==2.27.3");
    (*env->mutable_torch_requirements())["2.9.0+cu128"].add_pins(nv_29);
    return t.Key();
  };
  const std::string base = key("2.8.0", "2.9.0", "nvidia-nccl==2.27.3");
  EXPECT_EQ(key("2.8.0", "2.9.1", "nvidia-nccl==2.27.3"), base);
  EXPECT_EQ(key("2.8.0", "2.9.0", "nvidia-nccl==2.28.0"), base);
  EXPECT_NE(key("2.8.1", "2.9.0", "nvidia-nccl==2.27.3"), base);
  // A stable-ABI build validated with torch 2.9 does depend on 2.9's environment.
  auto validated = [&](const std::string& pin_29) {
    Inputs t;
    (*t.recipe.mutable_environment()->mutable_torch())["2.9"] = pin_29;
    farm::v1::MatrixCell other = Cell();
    other.set_torch("2.9");
    *t.validate_in.Add() = other;
    return t.Key();
  };
  EXPECT_NE(validated("2.9.0"), validated("2.9.1"));
}

// A release candidate's build is not its final release's, though both may be 2.12.0; a
// candidate of another minor changes nothing of this cell's.
TEST(BuildKeyTest, TheCellsOwnReleaseCandidateMarkIsAnInput) {
  auto key = [](const std::vector<std::string>& candidates, bool from_test) {
    Inputs t;  // the cell builds with torch 2.8
    auto* env = t.recipe.mutable_environment();
    (*env->mutable_torch())["2.8"] = "2.8.0";
    for (const std::string& c : candidates) {
      env->add_torch_candidates(c);
      if (from_test) env->add_torch_from_test(c);
    }
    return t.Key();
  };
  const std::string final_key = key({}, false);
  EXPECT_EQ(key({"2.9"}, true), final_key);
  EXPECT_NE(key({"2.8"}, true), final_key);
  EXPECT_NE(key({"2.8"}, false), key({"2.8"}, true));
}

TEST(SourceIdentityTest, NamesContentNeverPaths) {
  farm::v1::Source git;
  git.mutable_git()->set_url("https://example.org/a");
  EXPECT_EQ(SourceIdentity(git, "digest"), "");  // a ref not resolved
  git.mutable_git()->set_commit("abc");
  EXPECT_EQ(SourceIdentity(git, ""), "git:https://example.org/a@abc");
  farm::v1::Source archive;
  archive.mutable_archive()->set_sha256(std::string(64, 'f'));
  EXPECT_EQ(SourceIdentity(archive, ""), "archive:" + std::string(64, 'f'));
  farm::v1::Source path;
  path.set_local_path("/home/me/src");
  EXPECT_EQ(SourceIdentity(path, ""), "");
  EXPECT_EQ(SourceIdentity(path, "d1"), "content:d1");
}

TEST(KeyWithInputsTest, OrderOfWheelsDoesNotMatterAndAnUnknownBaseStaysUnknown) {
  EXPECT_EQ(KeyWithInputs("k", {"a", "b"}), KeyWithInputs("k", {"b", "a"}));
  EXPECT_NE(KeyWithInputs("k", {"a"}), KeyWithInputs("k", {"b"}));
  EXPECT_NE(KeyWithInputs("k", {"a"}), "k");
  EXPECT_EQ(KeyWithInputs("", {"a"}), "");
}

TEST(ScheduleInputsDigestTest, CoversEveryInput) {
  farm::v1::SubmitBuildRequest req;
  req.set_recipe_yaml("name: a\n");
  req.mutable_source()->mutable_git()->set_url("u");
  EXPECT_EQ(ScheduleInputsDigest(req), "");  // no commit: unknown content
  req.mutable_source()->mutable_git()->set_commit(std::string(40, 'a'));
  std::string base = ScheduleInputsDigest(req);
  EXPECT_EQ(base.size(), 64u);
  auto changed = [&](auto mutate) {
    farm::v1::SubmitBuildRequest r = req;
    mutate(&r);
    return ScheduleInputsDigest(r) != base;
  };
  EXPECT_TRUE(changed([](auto* r) { r->set_recipe_yaml("name: b\n"); }));
  EXPECT_TRUE(changed([](auto* r) { r->add_patches()->set_content("x"); }));
  EXPECT_TRUE(changed(
      [](auto* r) { r->mutable_source()->mutable_git()->set_commit(std::string(40, 'b')); }));
  EXPECT_TRUE(changed([](auto* r) { r->mutable_matrix()->add_python("3.12"); }));
  EXPECT_TRUE(changed([](auto* r) {
    farm::v1::SubmitBuildRequest* dep = r->add_requirements();
    dep->set_recipe_yaml("name: dep\n");
    dep->mutable_source()->mutable_git()->set_commit(std::string(40, 'c'));
  }));
  EXPECT_FALSE(changed([](auto* r) { r->set_priority(5); }));
}

}  // namespace
}  // namespace farm::builds
