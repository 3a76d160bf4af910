#include "common/upstream/pep508.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace farm::upstream {
namespace {

bool Eval(const std::string& marker, const MarkerEnv& env, const std::string& extra = "") {
  Result<bool> r = EvaluateMarker(marker, env, extra);
  EXPECT_TRUE(r.ok()) << marker << ": " << r.status().ToString();
  return r.ok() && *r;
}

TEST(Pep508Test, RefusesUrlsAndMalformedText) {
  for (const char* bad : {"pkg @ https://evil/x.whl", "-pkg", "pkg[a", "pkg>=1;$(rm)", "",
                          "pkg>=1 | cat", "pkg[a b]"}) {
    Result<DependencySpec> dep = ParseDependency(bad);
    if (dep.ok()) {
      // A marker with shell text parses as a requirement but never evaluates.
      EXPECT_FALSE(EvaluateMarker(dep->marker, {}).ok()) << bad;
    } else {
      EXPECT_EQ(dep.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_FALSE(ParseDependency(std::string(3000, 'a')).ok());
}

TEST(Pep508Test, MarkersForLinuxCpython) {
  MarkerEnv py311 = LinuxCpythonEnv("3.11", "x86_64");
  MarkerEnv py312 = LinuxCpythonEnv("3.12.3", "x86_64");
  EXPECT_EQ(py311.at("python_full_version"), "3.11.0");
  EXPECT_EQ(py312.at("python_version"), "3.12");
  EXPECT_FALSE(Eval("python_version >= \"3.12\"", py311));
  EXPECT_TRUE(Eval("python_version >= \"3.12\"", py312));
  // Version comparison, not string comparison: "3.9" < "3.12".
  EXPECT_TRUE(Eval("python_version > '3.9'", py311));
  EXPECT_TRUE(Eval("python_full_version < '3.12.4'", py312));
  EXPECT_TRUE(Eval("platform_system == 'Linux' and platform_machine == 'x86_64'", py311));
  EXPECT_FALSE(Eval("platform_machine == 'aarch64'", py311));
  EXPECT_FALSE(Eval("sys_platform == 'win32' or sys_platform == 'darwin'", py311));
  EXPECT_TRUE(
      Eval("(sys_platform == 'linux' or sys_platform == 'win32') and "
           "platform_python_implementation != \"PyPy\"",
           py311));
  EXPECT_TRUE(Eval("'linux' in sys_platform", py311));
  EXPECT_TRUE(Eval("'win' not in sys_platform", py311));
  EXPECT_TRUE(Eval("python_version ~= '3.11'", py311));
  // extra: only when asked for, names compared normalized.
  EXPECT_FALSE(Eval("extra == 'opt-einsum'", py311));
  EXPECT_TRUE(Eval("extra == 'opt-einsum'", py311, "opt_einsum"));
  EXPECT_TRUE(Eval("(sys_platform == 'linux') and extra == 'cufile'", py311, "cufile"));
  // Unknown variables are "" (platform_release says nothing here).
  EXPECT_FALSE(Eval("platform_release == '6.1'", py311));
}

TEST(Pep508Test, MalformedMarkersAreErrors) {
  MarkerEnv env = LinuxCpythonEnv("3.11", "x86_64");
  for (const char* bad :
       {"python_version >=", "os.system('x') == '1'", "python_version == '3.11' and", "((((",
        "python_version = '3'", "platform_system < 'Linux'", "'a' == 'a' xor 'b' == 'b'"}) {
    EXPECT_FALSE(EvaluateMarker(bad, env).ok()) << bad;
  }
  std::string deep(40, '(');
  deep += "python_version == '3.11'" + std::string(40, ')');
  EXPECT_FALSE(EvaluateMarker(deep, env).ok());
}

TEST(Pep508Test, SpecifiersOfPinnedVersions) {
  EXPECT_TRUE(*SpecifierMatches("==12.8.4.1", "12.8.4.1"));
  EXPECT_FALSE(*SpecifierMatches("==12.8.4.1", "12.8.4.2"));
  EXPECT_TRUE(*SpecifierMatches("==13.1.0.3.*", "13.1.0.3"));
  EXPECT_TRUE(*SpecifierMatches("<1.4,>=1.1.0", "1.3.0"));
  EXPECT_FALSE(*SpecifierMatches("<82", "82.0.0"));
  EXPECT_TRUE(*SpecifierMatches("", "2026.7.0"));
  EXPECT_TRUE(*SpecifierMatches("==2.8.0", "2.8.0+cu128"));  // local labels are ignored
  EXPECT_TRUE(*SpecifierMatches("!=4.0.0a0,!=4.0.0a1", "3.9.0"));
  EXPECT_FALSE(SpecifierMatches("===1.0", "1.0").ok());
  EXPECT_FALSE(SpecifierMatches(">=1", "not-a-version").ok());
}

}  // namespace
}  // namespace farm::upstream
