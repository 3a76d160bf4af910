#include "common/recipe/recipe.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

// The agreed format's example, every field set.
constexpr char kFullRecipe[] = R"(name: attn-example
version: "0.1.0"
source:
  local: ../path
subdirectory: csrc
patches: [patches/a.diff, patches/b.diff]
env: {KEY: value, JOBS_HINT: 8}
build: |
  "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
system_site_packages: true
timeout: 1800
gb_per_compile_job: 4.5
ccache: false
container_image: builder:cu130
matrix:
  python: ["3.11", "3.12"]
  torch: []
  cuda: ["12.8", "13.0"]
  arch_lists: ["9.0;12.0a;12.1a"]
  platform: [linux_x86_64]
  include: [{python: "3.12", cuda: "12.8"}]
  exclude: [{cuda: "12.8", arch_lists: "12.1a"}]
validation:
  script: validate.py
  import: [attn_example, attn_example._C]
  min_cosine: 0.995
  max_relative_l1: 0.05
  runtime_requirements: ["numpy==2.1.0"]
retry: {max_attempts: 2, backoff_seconds: 30, retry_build_failures: true}
publish:
  github_repo: owner/name
  github_tag_template: "v{version}"
  hf_repo: owner/kernels
  hf_path_template: "build/{variant}/{wheel}"
  replace_assets: true
  local_version: "cu{cuda_nodot}"
)";

constexpr char kMinimal[] = "name: tiny\nsource: {local: src}\nbuild: make\n";

std::string ErrorOf(std::string_view yaml) {
  Result<farm::v1::Recipe> r = ParseRecipe(yaml, "recipe.yaml");
  if (r.ok()) return "OK";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(ParseRecipeTest, FullExampleFillsEveryField) {
  Result<farm::v1::Recipe> r = ParseRecipe(kFullRecipe, "recipe.yaml");
  ASSERT_OK(r.status());
  const farm::v1::Recipe& recipe = r.value();
  EXPECT_EQ(recipe.name(), "attn-example");
  EXPECT_EQ(recipe.version(), "0.1.0");
  EXPECT_EQ(recipe.source().local_path(), "../path");
  EXPECT_EQ(recipe.subdirectory(), "csrc");
  ASSERT_EQ(recipe.patches_size(), 2);
  EXPECT_EQ(recipe.patches(1).name(), "patches/b.diff");
  EXPECT_EQ(recipe.patches(1).content(), "");
  EXPECT_EQ(recipe.env().at("KEY"), "value");
  EXPECT_EQ(recipe.env().at("JOBS_HINT"), "8");
  EXPECT_EQ(recipe.build_command(),
            "\"$FARM_PYTHON\" -m pip wheel . --no-build-isolation --no-deps --no-index -w "
            "\"$FARM_WHEEL_DIR\"\n");
  EXPECT_TRUE(recipe.system_site_packages());
  EXPECT_EQ(recipe.timeout_seconds(), 1800);
  EXPECT_DOUBLE_EQ(recipe.gb_per_compile_job(), 4.5);
  EXPECT_FALSE(recipe.ccache());
  EXPECT_EQ(recipe.container_image(), "builder:cu130");
  const farm::v1::MatrixAxes& m = recipe.matrix();
  EXPECT_EQ(m.python_size(), 2);
  EXPECT_EQ(m.torch_size(), 0);
  EXPECT_EQ(m.cuda(1), "13.0");
  EXPECT_EQ(m.arch_lists(0), "9.0;12.0a;12.1a");
  EXPECT_EQ(m.platform(0), "linux_x86_64");
  ASSERT_EQ(m.include_size(), 1);
  EXPECT_EQ(m.include(0).match().at("python"), "3.12");
  ASSERT_EQ(m.exclude_size(), 1);
  EXPECT_EQ(m.exclude(0).match().at("arch_lists"), "12.1a");
  EXPECT_EQ(recipe.validation().script(), "validate.py");
  EXPECT_EQ(recipe.validation().import_modules(1), "attn_example._C");
  EXPECT_DOUBLE_EQ(recipe.validation().min_cosine(), 0.995);
  EXPECT_DOUBLE_EQ(recipe.validation().max_relative_l1(), 0.05);
  EXPECT_EQ(recipe.validation().runtime_requirements(0), "numpy==2.1.0");
  EXPECT_DOUBLE_EQ(recipe.validation().gpu_memory_gb(), 8);  // the default with a script
  EXPECT_EQ(recipe.retry().max_attempts(), 2);
  EXPECT_EQ(recipe.retry().backoff_seconds(), 30);
  EXPECT_TRUE(recipe.retry().retry_build_failures());
  EXPECT_EQ(recipe.publish().github_repo(), "owner/name");
  EXPECT_EQ(recipe.publish().hf_path_template(), "build/{variant}/{wheel}");
  EXPECT_TRUE(recipe.publish().replace_assets());
  EXPECT_EQ(recipe.publish().local_version_template(), "cu{cuda_nodot}");
  EXPECT_EQ(recipe.yaml(), kFullRecipe);
}

TEST(ParseRecipeTest, APrivateTorchBuildAddsTorchCudaPairs) {
  auto r = ParseRecipe(std::string(kMinimal) +
                           "matrix:\n  torch: [\"2.8\"]\n  cuda: [\"13.0\"]\n"
                           "  torch_cuda: {\"2.8\": [\"13.0\", \"12.9\"]}\n",
                       "recipe.yaml");
  ASSERT_OK(r.status());
  const auto& extra = r->matrix().torch_cuda();
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(extra.at("2.8").cuda().begin(), extra.at("2.8").cuda().end()),
            (std::vector<std::string>{"13.0", "12.9"}));
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  torch_cuda: {\"2.8.1\": [\"13.0\"]}\n"),
            "recipe.yaml:5:16: matrix.torch_cuda keys are torch minors such as \"2.8\", got "
            "\"2.8.1\"");
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "matrix:\n  torch_cuda: {\"2.8\": [\"13\"]}\n")
                .find("matrix.torch_cuda.2.8[0]: CUDA version \"13\" must be MAJOR.MINOR"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "matrix:\n  torch_cuda: [\"2.8\"]\n")
                .find("matrix.torch_cuda must map torch minors"),
            std::string::npos);
}

TEST(ParseRecipeTest, MinimalRecipeGetsDefaults) {
  Result<farm::v1::Recipe> r = ParseRecipe(kMinimal, "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->timeout_seconds(), 3600);
  EXPECT_DOUBLE_EQ(r->gb_per_compile_job(), 4.0);
  EXPECT_TRUE(r->ccache());
  EXPECT_FALSE(r->network());  // builds are offline unless the recipe asks
  EXPECT_FALSE(r->system_site_packages());
  EXPECT_EQ(r->retry().max_attempts(), 3);
  EXPECT_EQ(r->retry().backoff_seconds(), 10);
  EXPECT_FALSE(r->has_validation());
  EXPECT_FALSE(r->has_publish());
  EXPECT_EQ(r->matrix().python_size(), 0);
}

TEST(ParseRecipeTest, ValidationDefaultsApplyWhenTheBlockIsGiven) {
  Result<farm::v1::Recipe> r =
      ParseRecipe(std::string(kMinimal) + "validation: {import: [tiny]}\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_DOUBLE_EQ(r->validation().min_cosine(), 0.99);
  EXPECT_DOUBLE_EQ(r->validation().max_relative_l1(), 0.07);
  EXPECT_DOUBLE_EQ(r->validation().min_speedup(), 0);  // no speed threshold unless asked
  r = ParseRecipe(std::string(kMinimal) + "validation: {import: [tiny], min_speedup: 1.2}\n",
                  "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_DOUBLE_EQ(r->validation().min_speedup(), 1.2);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "validation: {min_speedup: -1}\n").find("min_speedup"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(r->validation().gpu_memory_gb(), 0);  // no script, no GPU memory
}

TEST(ParseRecipeTest, RequireFastPathNeedsAScript) {
  Result<farm::v1::Recipe> r = ParseRecipe(
      std::string(kMinimal) + "validation: {script: v.py, require_fast_path: true}\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->validation().require_fast_path());
  EXPECT_EQ(
      ErrorOf(std::string(kMinimal) + "validation: {import: [tiny], require_fast_path: true}\n"),
      "recipe.yaml:4:49: \"validation.require_fast_path\" needs a validation script: the "
      "script reports which implementation each case ran");
}

TEST(ParseRecipeTest, ValidationGpuMemory) {
  Result<farm::v1::Recipe> r = ParseRecipe(
      std::string(kMinimal) + "validation: {script: v.py, gpu_memory_gb: 24.5}\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_DOUBLE_EQ(r->validation().gpu_memory_gb(), 24.5);
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "validation:\n  gpu_memory_gb: 0\n"),
            "recipe.yaml:5:18: \"validation.gpu_memory_gb\" must be between 0.1 and 4096, got 0");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "validation:\n  gpu_memory_gb: lots\n"),
            "recipe.yaml:5:18: \"validation.gpu_memory_gb\" must be a number, got \"lots\"");
}

TEST(ParseRecipeTest, GitAndTarballSources) {
  Result<farm::v1::Recipe> r = ParseRecipe(
      "name: g\nbuild: b\nsource:\n  git:\n    url: https://example.invalid/x.git\n"
      "    commit: 0123456789ABCDEF0123456789abcdef01234567\n    ref: main\n",
      "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->source().git().url(), "https://example.invalid/x.git");
  EXPECT_EQ(r->source().git().commit(), "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(r->source().git().ref(), "main");
  r = ParseRecipe("name: t\nbuild: b\nsource: {tarball: pkg-1.0.tar.zst}\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->source().tarball_path(), "pkg-1.0.tar.zst");
}

TEST(ParseRecipeTest, NetworkIsABoolean) {
  Result<farm::v1::Recipe> r = ParseRecipe(std::string(kMinimal) + "network: true\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->network());
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "network: yes\n").find("network"), std::string::npos);
}

TEST(ParseRecipeTest, RequiresNamesRecipesWithPinsAndUses) {
  Result<farm::v1::Recipe> r = ParseRecipe(std::string(kMinimal) + R"(requires:
  - recipe: triton
    commit: 0123abcd
    for: build
  - {recipe: ../dep, version: "1.0", for: [build, validation]}
  - recipe: "ünïcode-dep"
)",
                                           "r.yaml");
  ASSERT_OK(r.status());
  ASSERT_EQ(r->requirements_size(), 3);
  EXPECT_EQ(r->requirements(0).recipe(), "triton");
  EXPECT_EQ(r->requirements(0).commit(), "0123abcd");
  EXPECT_TRUE(r->requirements(0).for_build());
  EXPECT_FALSE(r->requirements(0).for_validation());
  EXPECT_EQ(r->requirements(1).version(), "1.0");
  EXPECT_TRUE(r->requirements(1).for_build() && r->requirements(1).for_validation());
  // Without `for:` the wheel is needed for both.
  EXPECT_TRUE(r->requirements(2).for_build() && r->requirements(2).for_validation());
  r = ParseRecipe(std::string(kMinimal) + "requires: []\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->requirements_size(), 0);
}

TEST(ParseRecipeTest, RequiresErrorsPointAtTheEntry) {
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "requires: triton\n").find("must be a list"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "requires: [{version: '1'}]\n").find("recipe"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "requires: [{recipe: a, for: runtime}]\n")
                .find("must be build, validation or both"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "requires: [{recipe: a}, {recipe: a}]\n")
                .find("required twice"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(std::string(kMinimal) + "requires: [{recipe: a, colour: red}]\n").find("colour"),
      std::string::npos);
  std::string many = std::string(kMinimal) + "requires:\n";
  for (int i = 0; i < 17; ++i) many += "  - recipe: r" + std::to_string(i) + "\n";
  EXPECT_NE(ErrorOf(many).find("more than 16"), std::string::npos);
}

TEST(ParseRecipeTest, BuildOnTargetGpuIsABoolean) {
  Result<farm::v1::Recipe> r = ParseRecipe(kMinimal, "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_FALSE(r->build_on_target_gpu());
  r = ParseRecipe(std::string(kMinimal) + "build_on_target_gpu: true\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->build_on_target_gpu());
  EXPECT_NE(
      ErrorOf(std::string(kMinimal) + "build_on_target_gpu: on\n").find("build_on_target_gpu"),
      std::string::npos);
}

TEST(ParseRecipeTest, UnrequestedArchsWarnByDefaultOrFail) {
  Result<farm::v1::Recipe> r = ParseRecipe(kMinimal, "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_FALSE(r->refuse_unrequested_archs());
  r = ParseRecipe(std::string(kMinimal) + "unrequested_archs: fail\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->refuse_unrequested_archs());
  r = ParseRecipe(std::string(kMinimal) + "unrequested_archs: warn\n", "r.yaml");
  ASSERT_OK(r.status());
  EXPECT_FALSE(r->refuse_unrequested_archs());
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "unrequested_archs: error\n"),
            "recipe.yaml:4:20: \"unrequested_archs\" must be warn or fail, got \"error\"");
}

TEST(ParseRecipeErrorTest, UnknownFieldsNameTheExpectedOnes) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "buidl: x\n"),
            "recipe.yaml:4:1: unknown field \"buidl\" in recipe (expected one of: name, version, "
            "source, subdirectory, patches, env, build, system_site_packages, timeout, "
            "gb_per_compile_job, ccache, container_image, matrix, validation, retry, publish, "
            "network, unrequested_archs, build_on_target_gpu, requires, torch_abi, environment, "
            "cells, size_budget, fatbin_compression)");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "retry:\n  max_attempt: 2\n"),
            "recipe.yaml:5:3: unknown field \"max_attempt\" in retry (expected one of: "
            "max_attempts, backoff_seconds, retry_build_failures)");
  EXPECT_EQ(ErrorOf("name: x\nbuild: b\nsource: {local: a, svn: b}\n"),
            "recipe.yaml:3:20: unknown field \"svn\" in source (expected one of: local, "
            "tarball, git)");
}

TEST(ParseRecipeErrorTest, WrongTypesPointAtTheValue) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "timeout: soon\n"),
            "recipe.yaml:4:10: \"timeout\" must be an integer, got \"soon\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "timeout: 1.5\n"),
            "recipe.yaml:4:10: \"timeout\" must be an integer, got \"1.5\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "ccache: maybe\n"),
            "recipe.yaml:4:9: \"ccache\" must be true or false, got \"maybe\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "gb_per_compile_job: lots\n"),
            "recipe.yaml:4:21: \"gb_per_compile_job\" must be a number, got \"lots\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "version: [1]\n"),
            "recipe.yaml:4:10: \"version\" must be a string, got a list");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "patches: a.diff\n"),
            "recipe.yaml:4:10: \"patches\" must be a list, got \"a.diff\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "patches: [a.diff, {b: c}]\n"),
            "recipe.yaml:4:19: \"patches[1]\" must be a string, got a mapping");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: [A]\n"),
            "recipe.yaml:4:6: \"env\" must be a mapping, got a list");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: {A: {b: 1}}\n"),
            "recipe.yaml:4:10: \"env.A\" must be a string, got a mapping");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "retry: {max_attempts: x}\n"),
            "recipe.yaml:4:23: \"retry.max_attempts\" must be an integer, got \"x\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix: [3.11]\n"),
            "recipe.yaml:4:9: matrix must be a mapping, got a list");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "version:\n"),
            "recipe.yaml:4:1: \"version\" must be a string, got null");
}

TEST(ParseRecipeErrorTest, MissingRequiredFields) {
  EXPECT_EQ(ErrorOf("source: {local: a}\nbuild: b\n"),
            "recipe.yaml:1:1: missing required field \"name\" in recipe");
  EXPECT_EQ(ErrorOf("name: a\nsource: {local: a}\n"),
            "recipe.yaml:1:1: missing required field \"build\" in recipe");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\n"),
            "recipe.yaml:1:1: missing required field \"source\" in recipe");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  git: {ref: main}\n"),
            "recipe.yaml:4:3: missing required field \"url\" in source.git");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  git: {url: https://h/x}\n"),
            "recipe.yaml:4:3: source.git needs \"commit\" or \"ref\"");
  EXPECT_EQ(ErrorOf("name: a\nbuild: \"  \"\nsource: {local: a}\n"),
            "recipe.yaml:2:8: \"build\" must not be empty");
}

TEST(ParseRecipeErrorTest, SourceMustBeExactlyOneKind) {
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource: {}\n"),
            "recipe.yaml:3:1: source must set exactly one of: local, tarball, git");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  local: a\n  tarball: b.tar\n"),
            "recipe.yaml:5:3: source sets both \"local\" and \"tarball\"; set exactly one of: "
            "local, tarball, git");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource: {tarball: x.zip}\n"),
            "recipe.yaml:3:19: \"source.tarball\" must end in .tar, .tar.gz, .tgz, .tar.xz or "
            ".tar.zst, got \"x.zip\"");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  git: {url: https://h/u, commit: abc123}\n"),
            "recipe.yaml:4:35: \"source.git.commit\" must be a full 40-hex-digit commit id, got "
            "\"abc123\"");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  git: {url: --upload-pack=x, ref: m}\n"),
            "recipe.yaml:4:14: \"source.git.url\" must be a repository URL without spaces that "
            "does not start with '-', got \"--upload-pack=x\"");
}

// Git sources come from remote repositories only: a local path or a transport that reads
// the host (file://, ext::, fd::) is refused where the recipe names it.
TEST(ParseRecipeErrorTest, GitSourcesAreRemoteUrlsOnly) {
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  git: {url: /srv/git/secret, ref: m}\n"),
            "recipe.yaml:4:14: \"source.git.url\": git URL \"/srv/git/secret\" is a local path; "
            "git sources must be remote https:// URLs");
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource:\n  git:\n    url: file:///srv/x\n    ref: m\n"),
            "recipe.yaml:5:10: \"source.git.url\": git URL \"file:///srv/x\" reads the host's "
            "own disk; git sources must be remote https:// URLs");
  for (const char* url :
       {"ext::sh", "fd::3", "http://h/x.git", "git://h/x.git", "../x", "https://u:p@h/x.git"}) {
    std::string err =
        ErrorOf("name: a\nbuild: b\nsource:\n  git: {url: \"" + std::string(url) + "\", ref: m}\n");
    EXPECT_EQ(err.rfind("recipe.yaml:4:14: \"source.git.url\": git URL", 0), 0u)
        << url << ": " << err;
  }
  EXPECT_EQ(
      ErrorOf("name: a\nbuild: b\nsource:\n  git: {url: \"git@github.com:o/r.git\", ref: m}\n"),
      "OK");  // ssh: the farm's own setting decides at submit
}

TEST(ParseRecipeErrorTest, NameSyntax) {
  EXPECT_EQ(ErrorOf("name: Attn_Example\nbuild: b\nsource: {local: a}\n"),
            "recipe.yaml:1:7: name \"Attn_Example\" must match [a-z0-9][a-z0-9._-]* (at most "
            "100 characters)");
  EXPECT_EQ(ErrorOf("name: -x\nbuild: b\nsource: {local: a}\n").substr(0, 20),
            "recipe.yaml:1:7: nam");
  EXPECT_EQ(ErrorOf("name: a.b_c-1\nbuild: b\nsource: {local: a}\n"), "OK");
}

TEST(ParseRecipeErrorTest, NumbersOutOfRange) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "timeout: -5\n"),
            "recipe.yaml:4:10: \"timeout\" must be between 1 and 604800, got -5");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "timeout: 99999999999999999999\n"),
            "recipe.yaml:4:10: \"timeout\" must be between 1 and 604800, got "
            "99999999999999999999");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "gb_per_compile_job: 0\n"),
            "recipe.yaml:4:21: \"gb_per_compile_job\" must be between 0.1 and 1024, got 0");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "gb_per_compile_job: .nan\n"),
            "recipe.yaml:4:21: \"gb_per_compile_job\" must be a number, got \".nan\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "validation:\n  min_cosine: 1.5\n"),
            "recipe.yaml:5:15: \"validation.min_cosine\" must be between 0 and 1, got 1.5");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "retry: {max_attempts: 0}\n"),
            "recipe.yaml:4:23: \"retry.max_attempts\" must be between 1 and 10, got 0");
}

TEST(ParseRecipeErrorTest, InvalidMatrixValues) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  arch_lists: [\"9.0;9.x\"]\n"),
            "recipe.yaml:5:16: matrix.arch_lists[0]: invalid arch list entry \"9.x\" in "
            "\"9.0;9.x\": expected N.M with an optional a or f suffix and +PTX (\"9.0\", "
            "\"12.0a\", \"8.6+PTX\"), sm_NN or compute_NN");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  arch_lists: [\"8.6a\"]\n"),
            "recipe.yaml:5:16: matrix.arch_lists[0]: arch list entry \"8.6a\": the 'a' suffix "
            "needs compute capability >= 9.0");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  python: [\"3.11\", 3]\n"),
            "recipe.yaml:5:20: matrix.python[1]: python version \"3\" must be MAJOR.MINOR such "
            "as \"3.11\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  cuda: [\"12.8\", \"12.8\"]\n"),
            "recipe.yaml:5:18: matrix.cuda[1]: duplicate value \"12.8\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  exclude: [{pyton: \"3.11\"}]\n"),
            "recipe.yaml:5:14: unknown axis \"pyton\" in matrix.exclude[0] (expected one of: "
            "python, torch, cuda, arch_lists, platform)");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  include: [{}]\n"),
            "recipe.yaml:5:13: \"matrix.include[0]\" must name at least one axis");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  include: [{cuda: \"13\"}]\n"),
            "recipe.yaml:5:20: matrix.include[0].cuda: CUDA version \"13\" must be MAJOR.MINOR "
            "such as \"12.8\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "matrix:\n  platform: [Linux-x86]\n"),
            "recipe.yaml:5:14: matrix.platform[0]: platform \"Linux-x86\" must be a wheel "
            "platform tag such as \"linux_x86_64\"");
}

TEST(ParseRecipeErrorTest, DuplicateKeys) {
  EXPECT_EQ(ErrorOf("name: a\nbuild: b\nsource: {local: a}\nname: c\n"),
            "recipe.yaml:4:1: duplicate field \"name\" in recipe (first set at line 1)");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env:\n  A: 1\n  A: 2\n"),
            "recipe.yaml:6:3: duplicate key \"A\" in env (first set at line 5)");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "patches: [a.diff, a.diff]\n"),
            "recipe.yaml:4:19: \"patches[1]\": patch \"a.diff\" is listed twice (first at line 4)");
}

TEST(ParseRecipeErrorTest, PathsAndEnvNames) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "subdirectory: ../up\n"),
            "recipe.yaml:4:15: \"subdirectory\" must be a relative path inside the source "
            "tree, got \"../up\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: {VIRTUAL_ENV: /x}\n"),
            "recipe.yaml:4:7: env \"VIRTUAL_ENV\" is set by the worker for every build and "
            "cannot be overridden");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: {TORCH_CUDA_ARCH_LIST: \"9.0\"}\n"),
            "recipe.yaml:4:7: env \"TORCH_CUDA_ARCH_LIST\" cannot be set here; list it under "
            "matrix.arch_lists so it is checked against CUDA and GPUs");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: {PATH: /opt/bin, MAX_JOBS: 2}\n"), "OK");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: {FARM_WHEEL_DIR: /x}\n"),
            "recipe.yaml:4:7: env \"FARM_WHEEL_DIR\" is set by the worker for every build and "
            "cannot be overridden");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "env: {\"A-B\": 1}\n"),
            "recipe.yaml:4:7: env name \"A-B\" must match [A-Za-z_][A-Za-z0-9_]*");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "publish: {github_repo: nope}\n"),
            "recipe.yaml:4:24: \"publish.github_repo\" must be owner/name, got \"nope\"");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "validation: {import: [\"a b\"]}\n"),
            "recipe.yaml:4:23: \"validation.import[0]\" must be a Python module name, got "
            "\"a b\"");
}

TEST(ParseRecipeErrorTest, YamlSyntaxAndDocumentShape) {
  // An unclosed flow list is reported at its '[' (yaml-cpp marks the line after it).
  EXPECT_EQ(ErrorOf("name: a\nbuild: [b\nsource: x\n"),
            "recipe.yaml:2:8: this '[' opens a list that is never closed: a ']' is missing");
  EXPECT_EQ(ErrorOf("name: a\nmatrix:\n  python: [\"3.11\", \"3.12\"\n  cuda: [\"13.0\"]\n"),
            "recipe.yaml:3:11: this '[' opens a list that is never closed: a ']' is missing");
  EXPECT_EQ(ErrorOf("name: a\nenv: {A: \"[x\", B: 1\nbuild: b\n"),
            "recipe.yaml:2:6: this '{' opens a map that is never closed: a '}' is missing");
  // A tab in the indentation is named as a tab, where it is.
  EXPECT_EQ(ErrorOf("name: a\nsource:\n\tlocal: .\nbuild: b\n"),
            "recipe.yaml:3:1: a tab indents this line: YAML indents with spaces only (yaml-cpp: "
            "illegal map value)");
  EXPECT_EQ(ErrorOf("name: a\nenv:\n  A: \"1\"\n\tB: \"2\"\nbuild: b\n"),
            "recipe.yaml:4:1: a tab indents this line: YAML indents with spaces only (yaml-cpp: "
            "end of map not found)");
  // A tab inside a block scalar's text is its content, not an error.
  EXPECT_TRUE(
      ParseRecipe("name: a\nsource: {local: .}\nbuild: |\n  make\n  \tindented\n", "r.yaml").ok());
  EXPECT_EQ(ErrorOf("name: a\n  build: b\n"),
            "recipe.yaml:2:8: YAML syntax error: illegal map value");
  EXPECT_EQ(ErrorOf(""), "recipe.yaml:1:1: the recipe is empty");
  EXPECT_EQ(ErrorOf("- a\n- b\n"), "recipe.yaml:1:1: a recipe must be a mapping, got a list");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "---\nname: b\n"),
            "recipe.yaml:4:1: a recipe is one YAML document; a second one starts here");
  // yaml-cpp's LoadAll never returns on these (found by tests/fuzz/recipe_fuzz).
  EXPECT_EQ(ErrorOf(",\n"), "recipe.yaml:1:1: YAML syntax error: no document can start here");
  EXPECT_EQ(ErrorOf(",nr--\n \n"),
            "recipe.yaml:1:1: YAML syntax error: no document can start here");
}

TEST(ParseRecipeErrorTest, OversizedRecipeIsRejected) {
  std::string yaml = std::string(kMinimal) + "# " + std::string(kMaxRecipeBytes, 'x') + "\n";
  EXPECT_EQ(ErrorOf(yaml), "recipe.yaml:1:1: the recipe is " + std::to_string(yaml.size()) +
                               " bytes; at most 1048576 are accepted");
}

}  // namespace
}  // namespace farm::recipe
