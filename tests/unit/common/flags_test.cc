#include "common/flags.h"

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm {
namespace {

Flags MakeFlags() {
  return Flags({{"data-dir", "DIR", ""},
                {"label", "K=V", ""},
                {"log-json", "", ""},
                {"lease-ms", "MS", ""},
                {"config", "FILE", ""}});
}

Status ParseArgs(Flags* flags, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("prog")};
  for (auto& a : args) argv.push_back(a.data());
  return flags->Parse(static_cast<int>(argv.size()), argv.data());
}

TEST(FlagsTest, ParsesValuesRepeatsBooleansAndPositionals) {
  Flags flags = MakeFlags();
  ASSERT_OK(ParseArgs(
      &flags, {"show", "--data-dir", "d", "--label=a=1", "--label", "b=2", "--log-json", "7"}));
  EXPECT_EQ(flags.Get("data-dir"), "d");
  EXPECT_EQ(flags.GetAll("label"), (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_TRUE(flags.Has("log-json"));
  EXPECT_EQ(flags.positionals(), (std::vector<std::string>{"show", "7"}));
}

TEST(FlagsTest, RejectsUnknownFlagsMissingValuesAndBadIntegers) {
  Flags a = MakeFlags();
  EXPECT_EQ(ParseArgs(&a, {"--data-dri", "x"}).message(),
            "unknown flag --data-dri (did you mean --data-dir?)");
  Flags near = MakeFlags();
  EXPECT_EQ(ParseArgs(&near, {"--labels", "x"}).message(),
            "unknown flag --labels (did you mean --label?)");
  Flags far = MakeFlags();
  EXPECT_EQ(ParseArgs(&far, {"--colour", "x"}).message(), "unknown flag --colour");
  Flags b = MakeFlags();
  EXPECT_EQ(ParseArgs(&b, {"--data-dir"}).message(), "--data-dir needs a DIR");
  Flags c = MakeFlags();
  ASSERT_OK(ParseArgs(&c, {"--lease-ms", "soon"}));
  EXPECT_EQ(c.GetInt("lease-ms", 1).status().message(),
            "--lease-ms must be an integer, got \"soon\"");
}

TEST(FlagsTest, ConfigFileFillsWhatTheCommandLineLeftOut) {
  testing::ScopedTempDir dir;
  std::string path = dir.path() + "/farmd.yaml";
  ASSERT_OK(fs::WriteFileAtomic(path,
                                "data-dir: /from/file\nlease-ms: 9000\nlabel: [x=1, y=2]\n"
                                "log-json: true\n"));
  Flags flags = MakeFlags();
  ASSERT_OK(ParseArgs(&flags, {"--data-dir", "/from/flag"}));
  ASSERT_OK(flags.MergeConfigFile(path));
  EXPECT_EQ(flags.Get("data-dir"), "/from/flag");
  EXPECT_EQ(flags.GetInt("lease-ms", 0).value(), 9000);
  EXPECT_EQ(flags.GetAll("label").size(), 2u);
  EXPECT_TRUE(flags.Has("log-json"));

  ASSERT_OK(fs::WriteFileAtomic(path, "data-dir: a\nleas-ms: 1\n"));
  Flags bad = MakeFlags();
  EXPECT_EQ(bad.MergeConfigFile(path).message(), path + ":2: unknown setting \"leas-ms\"");
}

}  // namespace
}  // namespace farm
