#include "common/recipe/wheel_names.h"

#include <gtest/gtest.h>

#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "tests/support/test_util.h"

namespace farm::recipe {
namespace {

// Parses `yaml`, expands its matrix and checks the names.
Status Check(const std::string& yaml, const std::vector<std::string>& request_arch_lists = {}) {
  auto recipe = ParseRecipe(yaml, "r.yaml");
  if (!recipe.ok()) return recipe.status();
  farm::v1::MatrixAxes requested;
  for (const auto& a : request_arch_lists) requested.add_arch_lists(a);
  auto expansion = ExpandMatrix(requested, recipe->matrix());
  EXPECT_OK(expansion.status);
  return CheckWheelNames(*recipe, expansion.cells, "r.yaml", !request_arch_lists.empty());
}

constexpr char kBase[] = R"(name: attn-example
version: "0.1.0"
source: {git: {url: "https://example.invalid/a.git", commit: "0123456789abcdef0123456789abcdef01234567"}}
build: "true"
)";

TEST(WheelNamesTest, DefaultLabelKeepsTwoArchListsApart) {
  EXPECT_OK(Check(std::string(kBase) + R"(matrix:
  python: ["3.11", "3.12"]
  cuda: ["12.8", "13.0"]
  arch_lists: ["9.0;12.0a;12.1a", "12.1a"]
)"));
}

TEST(WheelNamesTest, TemplateWithoutArchIsRefusedAtItsPosition) {
  Status s = Check(std::string(kBase) + R"(matrix:
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["9.0;12.0a;12.1a", "12.1a"]
publish:
  local_version: "cu{cuda_nodot}"
)");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("r.yaml:10:18: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("\"+cu130\""), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("add {arch} to publish.local_version"), std::string::npos)
      << s.message();
}

TEST(WheelNamesTest, TemplateWithoutTorchNamesTorch) {
  Status s = Check(std::string(kBase) + R"(matrix:
  python: ["3.12"]
  torch: ["2.8", "2.9"]
  cuda: ["12.8"]
  arch_lists: ["9.0a"]
publish: {local_version: "cu{cuda_nodot}.{arch}"}
)");
  EXPECT_NE(s.message().find("add {torch_nodot}"), std::string::npos) << s.message();
}

TEST(WheelNamesTest, TwoSpellingsOfOneArchListPointAtTheSecond) {
  Status s = Check(std::string(kBase) + R"(matrix:
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["8.0;9.0", "9.0;8.0"]
)");
  EXPECT_NE(s.message().find("r.yaml:8:27: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("both build sm80.sm90"), std::string::npos) << s.message();
  Status req = Check(
      std::string(kBase) + "matrix: {cuda: [\"13.0\"], arch_lists: [\"8.0;9.0\", \"9.0;8.0\"]}\n",
      {"8.0;9.0", "9.0;8.0"});
  EXPECT_NE(req.message().find("in --arch-list"), std::string::npos) << req.message();
}

TEST(WheelNamesTest, UnknownPlaceholderIsRefusedAtTheTemplate) {
  Status s = Check(std::string(kBase) + "publish:\n  local_version: \"{gpu}\"\n");
  EXPECT_NE(s.message().find("r.yaml:6:18: "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("unknown placeholder {gpu}"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace farm::recipe
