#include "worker/env/pin_check.h"

#include <gtest/gtest.h>

namespace farm::env {
namespace {

const upstream::MarkerEnv kPy312 = upstream::LinuxCpythonEnv("3.12", "x86_64");

std::vector<std::string> Lines(const std::vector<PinProblem>& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems) out.push_back(p.line);
  return out;
}

TEST(PinCheckTest, MissingPinsAreNamedWithTheLineToAdd) {
  std::vector<PinnedDist> dists = {
      {"torch",
       "2.8.0+cu128",
       {"nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\"", "filelock",
        "setuptools; python_version >= \"3.12\"", "optree>=0.13.0; extra == \"optree\""}},
      {"filelock", "3.19.1", {}}};
  auto problems = CheckPins(dists, kPy312, nullptr);
  EXPECT_EQ(Lines(problems), (std::vector<std::string>{"nvidia-cublas-cu12==12.8.4.1", ""}));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[1].requirement, "setuptools; python_version >= \"3.12\"");
  EXPECT_EQ(DescribeProblems(problems),
            "  add nvidia-cublas-cu12==12.8.4.1 (torch 2.8.0+cu128 requires "
            "nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\")\n"
            "  pin a release of it (torch 2.8.0+cu128 requires setuptools; python_version >= "
            "\"3.12\")\n");
  // On Python 3.11 setuptools is not required.
  EXPECT_EQ(CheckPins(dists, upstream::LinuxCpythonEnv("3.11", "x86_64"), nullptr).size(), 1u);
}

TEST(PinCheckTest, TheSuggesterPicksTheVersionOfARange) {
  std::vector<PinnedDist> dists = {{"torch", "2.8.0", {"sympy>=1.13.3"}}, {"sympy", "1.12", {}}};
  auto problems = CheckPins(dists, kPy312, [](const upstream::DependencySpec& dep) {
    return dep.name == "sympy" ? std::string("1.14.0") : std::string();
  });
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pinned, "sympy==1.12");
  EXPECT_EQ(problems[0].line, "sympy==1.14.0");
  EXPECT_EQ(DescribeProblems(problems),
            "  replace sympy==1.12 with sympy==1.14.0 (torch 2.8.0 requires sympy>=1.13.3)\n");
}

TEST(PinCheckTest, ExtrasAskedOfAPinnedDistCount) {
  std::vector<PinnedDist> dists = {
      {"torch", "2.11.0", {"cuda-toolkit[cublas,nvrtc]==13.0.2; platform_system == \"Linux\""}},
      {"cuda-toolkit",
       "13.0.2",
       {"nvidia-cublas==13.1.0.3.*; (sys_platform == 'linux') and extra == 'cublas'",
        "nvidia-cuda-nvrtc==13.0.88.*; (sys_platform == 'linux') and extra == 'nvrtc'",
        "nvidia-npp==13.0.1.2.*; (sys_platform == 'linux') and extra == 'npp'"}},
      {"nvidia-cublas", "13.1.0.3", {}}};
  auto problems = CheckPins(dists, kPy312, nullptr);
  EXPECT_EQ(Lines(problems), (std::vector<std::string>{"nvidia-cuda-nvrtc==13.0.88"}));
  EXPECT_EQ(problems[0].requirer, "cuda-toolkit 13.0.2");
}

TEST(PinCheckTest, NamesAreComparedNormalizedAndCompleteLocksPass) {
  std::vector<PinnedDist> dists = {{"torch", "2.8.0", {"typing-extensions>=4.10.0", "Jinja2"}},
                                   {"typing_extensions", "4.15.0", {}},
                                   {"jinja2", "3.1.6", {"MarkupSafe>=2.0"}},
                                   {"markupsafe", "3.0.2", {}}};
  EXPECT_TRUE(CheckPins(dists, kPy312, nullptr).empty());
}

TEST(PinCheckTest, UnreadableRequirementsAreProblemsNotSkipped) {
  std::vector<PinnedDist> dists = {
      {"torch", "2.8.0", {"evil @ https://x/y.whl", "ok; os.system('x') == '1'"}}};
  auto problems = CheckPins(dists, kPy312, nullptr);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].why.find("URL"), std::string::npos);
  EXPECT_NE(problems[1].why.find("marker"), std::string::npos);
}

TEST(PinCheckTest, RequiresDistOfMetadata) {
  EXPECT_EQ(RequiresDistOf("Metadata-Version: 2.1\nName: torch\nRequires-Dist: filelock\n"
                           "Requires-Dist: sympy>=1.13.3\n\nRequires-Dist: in the body\n"),
            (std::vector<std::string>{"filelock", "sympy>=1.13.3"}));
}

}  // namespace
}  // namespace farm::env
