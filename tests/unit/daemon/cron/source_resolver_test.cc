// Git ref resolution: the ls-remote output parser, the URL policy applied before git runs,
// and the real git against a server on 127.0.0.1 that never answers. Resolving a real
// repository is tested on the real binaries against a git server on 127.0.0.1
// (tests/integration/test_git_sources.py).
#include "daemon/cron/source_resolver.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "tests/support/test_util.h"

namespace farm::cron {
namespace {

TEST(PickRefTest, PrefersBranchesThenPeeledTags) {
  std::string a(40, 'a'), b(40, 'b'), c(40, 'c'), d(40, 'd');
  std::string out = a + "\trefs/heads/main\n" + b + "\trefs/tags/main\n" + c + "\trefs/tags/v1\n" +
                    d + "\trefs/tags/v1^{}\n" + a + "\tHEAD\n";
  EXPECT_EQ(PickRef(out, "main"), a);
  EXPECT_EQ(PickRef(out, "v1"), d);
  EXPECT_EQ(PickRef(out, "refs/tags/main"), b);
  EXPECT_EQ(PickRef(out, "HEAD"), a);
  EXPECT_EQ(PickRef(out, "nope"), "");
  EXPECT_EQ(PickRef("garbage\tline\n", "line"), "");
}

TEST(GitSourceResolverTest, LocalPathsAndForeignTransportsNeverReachGit) {
  farm::testing::RecordingRunner runner;
  GitSourceResolver resolver(&runner, git::GitPolicy{});
  for (const char* url : {"/srv/git/secret", "file:///srv/git/secret", "ext::sh -c x",
                          "--upload-pack=x", "http://example.org/x.git", "git@github.com:o/r"}) {
    EXPECT_EQ(resolver.ResolveGitRef(url, "main").status().code(), StatusCode::kInvalidArgument)
        << url;
    // A full commit needs no git either, yet the URL is still checked.
    EXPECT_EQ(resolver.ResolveGitRef(url, std::string(40, 'a')).status().code(),
              StatusCode::kInvalidArgument)
        << url;
  }
  EXPECT_TRUE(runner.started.empty());
}

TEST(GitSourceResolverTest, TurnedOffItResolvesOnlyFullCommits) {
  farm::testing::RecordingRunner runner;
  GitSourceResolver resolver(&runner, git::GitPolicy{}, /*enabled=*/false);
  auto commit = resolver.ResolveGitRef("https://example.org/x.git", std::string(40, 'b'));
  ASSERT_OK(commit.status());
  EXPECT_EQ(*commit, std::string(40, 'b'));
  Status refused = resolver.ResolveGitRef("https://example.org/x.git", "main").status();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("--no-git-resolve"), std::string::npos) << refused.ToString();
  EXPECT_TRUE(runner.started.empty());
}

TEST(GitSourceResolverTest, TheRealGitRunsLockedDownWithTheFarmsArguments) {
  farm::testing::RecordingRunner runner;
  git::GitPolicy policy;
  policy.ca_file = "/etc/farm/ca.pem";
  GitSourceResolver resolver(&runner, policy);
  EXPECT_FALSE(resolver.ResolveGitRef("https://example.org/x.git", "main").ok());
  ASSERT_EQ(runner.started.size(), 1u);
  const std::vector<std::string>& argv = runner.started[0];
  EXPECT_EQ(argv.front(), "git");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "credential.helper="), argv.end());
  EXPECT_EQ(std::vector<std::string>(argv.end() - 4, argv.end()),
            (std::vector<std::string>{"ls-remote", "--", "https://example.org/x.git", "main"}));
}

// A server on 127.0.0.1 that accepts connections and never answers: farmd's resolution
// ends within its bound with one clean line.
TEST(GitSourceResolverTest, AServerThatHangsIsGivenUpOnInTime) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 16), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x.git";
  RealProcessRunner runner;
  git::GitPolicy policy;
  policy.timeout_ms = 2000;
  GitSourceResolver resolver(&runner, policy);
  auto start = std::chrono::steady_clock::now();
  Status s = resolver.ResolveGitRef(url, "main").status();
  auto took = std::chrono::steady_clock::now() - start;
  ::close(listener);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.message(), "git ls-remote timed out after 2 s");
  EXPECT_LT(took, std::chrono::seconds(15));
}

}  // namespace
}  // namespace farm::cron
