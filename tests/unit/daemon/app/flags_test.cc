// farmd's command line: defaults, values taken, and each refusal naming its flag, before
// farmd opens anything.
#include "daemon/app/flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace farm::app {
namespace {

Result<ServerOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "farmd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  Flags flags(FarmdFlagSpecs());
  FARM_RETURN_IF_ERROR(flags.Parse(static_cast<int>(argv.size()), argv.data()));
  return OptionsFromFlags(flags);
}

TEST(FarmdFlagsTest, DefaultsAndValuesTaken) {
  auto defaults = Parse({});
  ASSERT_OK(defaults.status());
  EXPECT_EQ(defaults->listen, "127.0.0.1:7070");
  EXPECT_EQ(defaults->data_dir, "data");
  EXPECT_EQ(defaults->tunables.lease_ms, 30000);
  EXPECT_EQ(defaults->tunables.source_retention_ms, 30LL * 24 * 3600 * 1000);
  EXPECT_TRUE(defaults->git_resolve);

  auto set = Parse({"--lease-ms", "5000", "--source-retention-days", "0", "--upstream-index",
                    "cu128=https://example.org/whl/cu128/", "--no-git-resolve",
                    "--webhook-max-attempts", "7", "--http-max-connections", "9"});
  ASSERT_OK(set.status());
  EXPECT_EQ(set->tunables.lease_ms, 5000);
  EXPECT_EQ(set->tunables.source_retention_ms, 0);
  EXPECT_EQ(set->upstream.indexes.at("cu128"), "https://example.org/whl/cu128/");
  EXPECT_FALSE(set->git_resolve);
  EXPECT_EQ(set->notify.max_attempts, 7);
  EXPECT_EQ(set->http.max_connections, 9);
}

TEST(FarmdFlagsTest, EachRefusalNamesItsFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"--lease-ms", "0"}, "--lease-ms: must be at least 1"},
      {{"--lease-ms", "soon"}, "--lease-ms"},
      {{"--source-retention-days", "-1"}, "--source-retention-days must be"},
      {{"--http-max-connections", "0"}, "--http-max-connections must be"},
      {{"--git-timeout-s", "3601"}, "--git-timeout-s must be"},
      {{"--watch-min-poll-s", "0"}, "--watch-min-poll-s must be"},
      {{"--upstream-index", "cu128=file:///etc"}, "--upstream-index wants NAME=http(s)://"},
      {{"--upstream-tree", "=https://x/"}, "--upstream-tree wants NAME=http(s)://"},
      // Checked before farmd starts: a NAME its routes can carry, a URL with a host, once.
      {{"--upstream-index", "cu 128=https://x/"}, "NAME is [a-z0-9._-], as cu128"},
      {{"--upstream-index", "../x=https://x/"}, "NAME is [a-z0-9._-]"},
      {{"--upstream-index", "cu128=https:///simple/"}, "--upstream-index wants NAME=http(s)://"},
      {{"--upstream-index", "cu128=http://a/", "--upstream-index", "cu128=http://b/"},
       "--upstream-index cu128 is given twice"},
      {{"--public-url", "ftp://x"}, "--public-url wants an http(s) URL"},
      {{"--webhook-backoff-ms", "0"}, "--webhook-backoff-ms must be"},
      {{"--webhook-max-attempts", "101"}, "--webhook-max-attempts must be"},
      {{"--quota-window-seconds", "0"}, "--quota-window-seconds must be"},
      {{"--secrets-file", "/nonexistent/secrets"}, "cannot read secrets"},
  };
  for (const Case& c : cases) {
    auto parsed = Parse(c.args);
    ASSERT_FALSE(parsed.ok()) << c.args[0];
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.args[0];
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos)
        << c.args[0] << ": " << parsed.status().message();
  }
}

}  // namespace
}  // namespace farm::app
