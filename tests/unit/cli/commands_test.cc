// farmctl's command line as a user types it, through RunFarmctl (no farmd is reached).
#include "cli/commands.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace farm::cli {
namespace {

struct Ran {
  int code = 0;
  std::string out;
  std::string err;
};

Ran Farmctl(std::vector<std::string> args) {
  for (const char* name :
       {"FARM_TOKEN", "FARM_TOKEN_FILE", "FARM_CONFIG", "FARM_SERVER", "FARM_SERVER_FILE"}) {
    unsetenv(name);
  }
  args.insert(args.begin(), "farmctl");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  int code = RunFarmctl(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

TEST(FarmctlTest, AMistypedFlagIsOneLineWithTheFlagMeant) {
  Ran r = Farmctl({"submit", "r.yaml", "--arch-lists", "9.0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "farmctl: unknown flag --arch-lists (did you mean --arch-list?)\n"
            "`farmctl --help` lists the commands and flags, `farmctl COMMAND --help` one "
            "command's flags\n");
  EXPECT_EQ(r.out, "");
}

TEST(FarmctlTest, NoTokenIsAUsageError) {
  Ran r = Farmctl({"--server", "127.0.0.1:1", "list"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no token: pass --token-file FILE"), std::string::npos) << r.err;
  Ran file = Farmctl({"--server", "127.0.0.1:1", "--token-file", "/nonexistent/t", "list"});
  EXPECT_EQ(file.code, 2) << file.err;
}

TEST(FarmctlTest, TheSchedulesUsageShowsWatchesAndUpdate) {
  Ran r = Farmctl({"schedules", "--help"});
  EXPECT_EQ(r.code, 0);
  std::string usage = r.out.substr(0, r.out.find('\n'));
  for (const char* part : {"--cron EXPR", "--watch-torch SPEC", "--watch-tags GLOB",
                           "--watch-toolkit SPEC", "update ID RECIPE"}) {
    EXPECT_NE(usage.find(part), std::string::npos) << part << " in " << usage;
  }
}

TEST(FarmctlTest, LocalCommandsSayWhatTheyNeed) {
  Ran export_index = Farmctl({"export-index", "/tmp/x"});  // no --from and no farmd named
  EXPECT_EQ(export_index.code, 2);
  EXPECT_NE(export_index.err.find("[--from http://FARMD:PORT]"), std::string::npos);
  Ran index = Farmctl({"index", "build", "/tmp/x"});
  EXPECT_EQ(index.code, 2);
  EXPECT_NE(index.err.find("usage: farmctl index make DIR"), std::string::npos) << index.err;
  Ran verify = Farmctl({"verify", "/nonexistent/x-1.0-py3-none-any.whl"});
  EXPECT_EQ(verify.code, 2);
  EXPECT_NE(verify.err.find("or name the farm with --server"), std::string::npos) << verify.err;
}

}  // namespace
}  // namespace farm::cli
