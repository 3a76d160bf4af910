#include "common/upstream/release_version.h"

#include <gtest/gtest.h>

namespace farm::upstream {
namespace {

ReleaseVersion V(const char* text) {
  auto v = ParseReleaseVersion(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v.value_or(ReleaseVersion{});
}

TEST(ReleaseVersionTest, ParsesTheFormsTorchReleasesUse) {
  ReleaseVersion v = V("2.9.0+cu130");
  EXPECT_EQ(v.release, (std::vector<int>{2, 9, 0}));
  EXPECT_EQ(v.local, "cu130");
  EXPECT_EQ(v.Minor(), "2.9");
  EXPECT_EQ(v.Public(), "2.9.0");
  EXPECT_FALSE(v.IsPrerelease());
  EXPECT_EQ(V("2.10.0rc1").Public(), "2.10.0rc1");
  EXPECT_TRUE(V("2.10.0rc1").IsPrerelease());
  EXPECT_TRUE(V("2.11.0.dev20260101+cu130").IsPrerelease());
  EXPECT_EQ(V("2.10.0-RC-1").Public(), "2.10.0rc1");
  EXPECT_EQ(V("v1.2").Public(), "1.2");
}

TEST(ReleaseVersionTest, RefusesWhatIsNotAVersion) {
  for (const char* bad : {"", "abc", "2.9.0+", "2.9.0+cu 1", "2..9", "2.9.0 junk", "1!2.0"}) {
    EXPECT_FALSE(ParseReleaseVersion(bad).has_value()) << bad;
  }
}

TEST(ReleaseVersionTest, OrdersAsPep440) {
  const char* ordered[] = {"2.9.0.dev1", "2.9.0a1",     "2.9.0b2", "2.9.0rc1",
                           "2.9.0",      "2.9.0.post1", "2.9.1",   "2.10.0"};
  for (size_t i = 0; i + 1 < std::size(ordered); ++i) {
    EXPECT_LT(CompareReleases(V(ordered[i]), V(ordered[i + 1])), 0)
        << ordered[i] << " < " << ordered[i + 1];
  }
  EXPECT_EQ(CompareReleases(V("2.9"), V("2.9.0+cu128")), 0);
}

TEST(VersionSpecTest, MatchesClauses) {
  auto spec = VersionSpec::Parse(">=2.8, <3, !=2.9.*");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->Matches(V("2.8.0+cu128")));
  EXPECT_FALSE(spec->Matches(V("2.9.1")));
  EXPECT_TRUE(spec->Matches(V("2.10.0")));
  EXPECT_FALSE(spec->Matches(V("3.0.0")));
  EXPECT_FALSE(spec->Matches(V("2.7.1")));
  auto compatible = VersionSpec::Parse("~=2.8");
  ASSERT_TRUE(compatible.ok());
  EXPECT_TRUE(compatible->Matches(V("2.11.0")));
  EXPECT_FALSE(compatible->Matches(V("3.0")));
  auto any = VersionSpec::Parse("");
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->Matches(V("0.1")));
}

TEST(VersionSpecTest, RefusesBadClausesWithTheReason) {
  for (const char* bad : {"2.8", ">=", ">=two", "~=2", ">=2.8+cu128", "=>2.8"}) {
    auto spec = VersionSpec::Parse(bad);
    EXPECT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace farm::upstream
