// Git ref resolution: the ls-remote output parser, and the real git against a repository
// made by the test.
#include "daemon/schedule/source_resolver.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace farm::schedule {
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

Status Git(RealProcessRunner& runner, const std::string& dir, std::vector<std::string> args) {
  ProcessSpec spec;
  spec.argv = {"git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  FARM_ASSIGN_OR_RETURN(auto out, RunAndCapture(runner, spec, 30000));
  if (out.result.exit_code != 0) return Status::Internal("git failed: " + out.err);
  return Status::Ok();
}

TEST(GitSourceResolverTest, ResolvesABranchOfARealRepository) {
  farm::testing::ScopedTempDir dir;
  RealProcessRunner runner;
  std::string repo = dir.path() + "/repo";
  ASSERT_OK(Git(runner, dir.path(), {"init", "--quiet", "-b", "main", repo}));
  ASSERT_OK(Git(runner, repo, {"commit", "--quiet", "--allow-empty", "-m", "one"}));
  GitSourceResolver resolver(&runner, 30000);
  auto first = resolver.ResolveGitRef(repo, "main");
  ASSERT_OK(first.status());
  EXPECT_EQ(first->size(), 40u);
  ASSERT_OK(Git(runner, repo, {"commit", "--quiet", "--allow-empty", "-m", "two"}));
  auto second = resolver.ResolveGitRef(repo, "main");
  ASSERT_OK(second.status());
  EXPECT_NE(first.value(), second.value());
  EXPECT_EQ(resolver.ResolveGitRef(repo, "no-such-branch").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(resolver.ResolveGitRef(dir.path() + "/missing", "main").status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(resolver.ResolveGitRef("--upload-pack=x", "main").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::schedule
