// farmd's command line: defaults, values taken, and each refusal naming its flag, before
// farmd opens anything.
#include "daemon/app/flags.h"

#include <gtest/gtest.h>

#include <set>
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

TEST(FarmdFlagsTest, ThePullThroughCacheIsBoundedAndRefusesStrangersByDefault) {
  auto defaults = Parse({});
  ASSERT_OK(defaults.status());
  EXPECT_EQ(defaults->upstream.max_bytes, int64_t{100} << 30);
  EXPECT_FALSE(defaults->upstream.anonymous_pulls);
  EXPECT_TRUE(defaults->upstream.allowed_hosts.empty());
  EXPECT_EQ(defaults->upstream.limits.max_in_flight, 8);
  EXPECT_EQ(defaults->upstream.limits.max_per_address, 4);

  auto set = Parse({"--upstream-cache-max-gib", "0.5", "--upstream-anonymous-pulls",
                    "--upstream-allow-host", "Files.PythonHosted.org", "--upstream-max-fetches",
                    "3", "--upstream-max-fetches-per-host", "1"});
  ASSERT_OK(set.status());
  EXPECT_EQ(set->upstream.max_bytes, int64_t{512} << 20);
  EXPECT_TRUE(set->upstream.anonymous_pulls);
  EXPECT_EQ(set->upstream.allowed_hosts, std::set<std::string>{"files.pythonhosted.org"});
  EXPECT_EQ(set->upstream.limits.max_in_flight, 3);
  EXPECT_EQ(set->upstream.limits.max_per_address, 1);
}

TEST(FarmdFlagsTest, AnUpstreamsCredentialsAreNeverRepeated) {
  auto bad = Parse({"--upstream-index", "priv=ftp://produser:S3CR3TTOKEN@host/idx/"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find("S3CR3TTOKEN"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("ftp://[REDACTED]@host/idx/"), std::string::npos)
      << bad.status().message();
}

TEST(FarmdFlagsTest, WheelRequestsTakeNoAnonymousOnesByDefault) {
  auto defaults = Parse({});
  ASSERT_OK(defaults.status());
  EXPECT_EQ(defaults->requests.anonymous_per_address, 0);
  EXPECT_EQ(defaults->requests.per_principal, 30);
  EXPECT_EQ(defaults->requests.window_ms, 3600 * 1000);
  auto set =
      Parse({"--anonymous-requests", "3", "--request-quota", "-1", "--quota-window-seconds", "60"});
  ASSERT_OK(set.status());
  EXPECT_EQ(set->requests.anonymous_per_address, 3);
  EXPECT_EQ(set->requests.per_principal, -1);
  EXPECT_EQ(set->requests.window_ms, 60 * 1000);
  auto bad = Parse({"--anonymous-requests", "-2"});
  EXPECT_NE(bad.status().message().find("--anonymous-requests"), std::string::npos);
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
      {{"--upstream-cache-max-gib", "-1"}, "--upstream-cache-max-gib must be"},
      {{"--upstream-cache-max-gib", "lots"}, "--upstream-cache-max-gib must be"},
      {{"--upstream-allow-host", "http://x/"}, "--upstream-allow-host wants a host"},
      {{"--upstream-max-fetches", "0"}, "--upstream-max-fetches must be"},
      {{"--upstream-max-fetches-per-host", "257"}, "--upstream-max-fetches-per-host must be"},
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
