// The git URL policy both farmd and farm-worker apply, and the locked-down way they run
// git: the real git refuses what the policy refuses even when handed the URL directly.
#include "common/git_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fs.h"
#include "common/process.h"

namespace farm::git {
namespace {

GitPolicy Https() { return GitPolicy{}; }
GitPolicy WithSsh() {
  GitPolicy p;
  p.allow_ssh = true;
  return p;
}

TEST(GitPolicyTest, RemoteHttpsUrlsAreAllowed) {
  for (const char* url :
       {"https://github.com/thu-ml/SageAttention.git", "https://github.com/thu-ml/SageAttention",
        "https://127.0.0.1:8443/repo.git", "https://[::1]:8443/x.git",
        "https://git.example.org/a/b/c%20d.git"}) {
    EXPECT_TRUE(CheckGitUrl(url, Https()).ok())
        << url << ": " << CheckGitUrl(url, Https()).message();
  }
}

TEST(GitPolicyTest, LocalPathsAndHostTransportsAreRefusedWithTheRule) {
  struct Case {
    const char* url;
    const char* says;
  };
  const Case cases[] = {
      {"/srv/git/secret", "is a local path"},
      {"./repo", "is a local path"},
      {"../../etc", "is a local path"},
      {"repo", "is a local path"},
      {"~/repo", "is a local path"},
      {"file:///srv/git/secret", "reads the host's own disk"},
      {"FILE:///srv/git/secret", "reads the host's own disk"},
      {"file:/srv/git/secret", "reads the host's own disk"},
      {"ext::sh -c touch% /tmp/pwned", "holds a space"},
      {"ext::sh", "uses git's ext:: transport"},
      {"fd::3", "uses git's fd:: transport"},
      {"https::foo", "uses git's https:: transport"},
      {"http://example.org/x.git", "uses the http:// transport"},
      {"git://example.org/x.git", "uses the git:// transport"},
      {"HTTPS://example.org/x.git", "uses the HTTPS:// transport"},
      {"ftp://example.org/x.git", "uses the ftp:// transport"},
      {"https://user:token@example.org/x.git", "carries credentials"},
      {"https://example.org", "names no repository path"},
      {"https://example.org/", "names no repository path"},
      {"https://-oProxyCommand=x/y", "has a malformed host"},
      {"https://exa mple.org/x", "holds a space"},
      {"https://example.org/x\n.git", "holds a space"},
      {"https://example.org:99999/x.git", "has a malformed host"},
      {"--upload-pack=touch /tmp/x", "holds a space"},
      {"-u", "starts with '-'"},
      {"git@github.com:org/repo.git", "ssh address, which this farm does not allow"},
      {"ssh://git@github.com/org/repo.git", "uses ssh, which this farm does not allow"},
  };
  for (const Case& c : cases) {
    Status s = CheckGitUrl(c.url, Https());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.url;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.url << ": " << s.message();
  }
  EXPECT_EQ(CheckGitUrl("", Https()).code(), StatusCode::kInvalidArgument);
  // A refusal never repeats a password.
  for (const char* url :
       {"https://farm:s3cret@example.org/x.git", "http://farm:s3cret@h:9/x.git"}) {
    EXPECT_EQ(CheckGitUrl(url, Https()).message().find("s3cret"), std::string::npos) << url;
  }
  EXPECT_EQ(CheckGitUrl("https://x.org/" + std::string(3000, 'a'), Https()).code(),
            StatusCode::kInvalidArgument);
}

TEST(GitPolicyTest, SshOnlyWhenTheOperatorAllowsIt) {
  for (const char* url : {"git@github.com:org/repo.git", "ssh://git@github.com/org/repo.git",
                          "ssh://github.com:2222/org/repo.git", "github.com:org/repo"}) {
    EXPECT_TRUE(CheckGitUrl(url, WithSsh()).ok())
        << url << ": " << CheckGitUrl(url, WithSsh()).message();
  }
  for (const char* url :
       {"-oProxyCommand=x@host:repo", "git@-oProxyCommand=x:repo", "git@host:-repo",
        "ssh://-oProxyCommand=x/repo", "/local/path", "file:///x", "ext::ssh"}) {
    EXPECT_FALSE(CheckGitUrl(url, WithSsh()).ok()) << url;
  }
}

TEST(GitPolicyTest, TheEnvironmentHasNoConfigurationPromptOrForeignTransport) {
  GitPolicy policy;
  policy.ca_file = "/etc/farm/git-ca.pem";
  auto env = LockedGitEnv(policy, "/nonexistent-home");
  EXPECT_EQ(env["GIT_CONFIG_NOSYSTEM"], "1");
  EXPECT_EQ(env["GIT_CONFIG_GLOBAL"], "/dev/null");
  EXPECT_EQ(env["GIT_TERMINAL_PROMPT"], "0");
  EXPECT_EQ(env["GIT_ALLOW_PROTOCOL"], "https");
  EXPECT_EQ(env["GIT_SSL_CAINFO"], "/etc/farm/git-ca.pem");
  EXPECT_EQ(env["HOME"], "/nonexistent-home");
  EXPECT_EQ(LockedGitEnv(WithSsh(), "/h")["GIT_ALLOW_PROTOCOL"], "https:ssh");
  EXPECT_EQ(LockedGitEnv(Https(), "/h").count("GIT_SSL_CAINFO"), 0u);
  std::vector<std::string> args = LockedGitArgs(Https());
  auto has = [&args](const std::string& v) {
    return std::find(args.begin(), args.end(), v) != args.end();
  };
  EXPECT_TRUE(has("credential.helper="));
  EXPECT_TRUE(has("protocol.allow=never"));
  EXPECT_TRUE(has("protocol.https.allow=always"));
  EXPECT_FALSE(has("protocol.ssh.allow=always"));
}

// Even handed a local path, file:// or ext:: directly (as if the URL check were skipped),
// the real git run this way refuses to touch them.
TEST(GitPolicyTest, TheRealGitRefusesLocalAndCommandTransports) {
  RealProcessRunner runner;
  auto dir = fs::MakeTempDir("", "git-policy-");
  ASSERT_TRUE(dir.ok());
  const std::string repo = *dir + "/repo";
  ProcessSpec init{.argv = {"git", "init", "--quiet", repo},
                   .env = {{"PATH", "/usr/bin:/bin"}},
                   .clear_env = true};
  auto made = RunAndCapture(runner, init, 30'000);
  if (!made.ok() || made->result.exit_code != 0) GTEST_SKIP() << "git is not installed here";
  for (const std::string& url :
       {repo, "file://" + repo, std::string("ext::touch ") + *dir + "/pwned"}) {
    ProcessSpec spec;
    spec.argv = {"git"};
    for (const std::string& a : LockedGitArgs(Https())) spec.argv.push_back(a);
    spec.argv.insert(spec.argv.end(), {"ls-remote", "--", url});
    spec.env = LockedGitEnv(Https(), *dir);
    spec.clear_env = true;
    auto out = RunAndCapture(runner, spec, 30'000);
    ASSERT_TRUE(out.ok());
    EXPECT_NE(out->result.exit_code, 0) << url;
    EXPECT_NE(out->err.find("not allowed"), std::string::npos) << url << ": " << out->err;
  }
  EXPECT_FALSE(fs::Exists(*dir + "/pwned"));
  ASSERT_TRUE(fs::RemoveAll(*dir).ok());
}

TEST(GitPolicyTest, ErrorsAreOneFixedLineNeverTheServersText) {
  EXPECT_EQ(SanitizedGitError("git ls-remote", 128, false, 0,
                              "remote: <script>alert(1)</script>\nfatal: repository "
                              "'https://h/x/' not found\n"),
            "git ls-remote failed: the repository was not found");
  EXPECT_EQ(SanitizedGitError("git ls-remote", 128, false, 0,
                              "fatal: could not read Username for 'https://h': terminal "
                              "prompts disabled\n"),
            "git ls-remote failed: the repository needs credentials; the farm fetches without any");
  EXPECT_EQ(SanitizedGitError("git ls-remote", 128, false, 0,
                              "fatal: unable to access 'https://h/': Could not resolve host: h\n"),
            "git ls-remote failed: the host name does not resolve");
  EXPECT_EQ(SanitizedGitError("git ls-remote", -1, true, 5000, "anything"),
            "git ls-remote timed out after 5 s");
  EXPECT_EQ(SanitizedGitError("git ls-remote", 2, false, 0, "root:x:0:0:secret line\nmore"),
            "git ls-remote failed (exit 2)");
}

}  // namespace
}  // namespace farm::git
