// GitHubReleasesClient on releases that are already published, against a scripted
// FakeHttpClient: what a locked (immutable) release allows, and the 422 GitHub answers
// when the release object did not say it was immutable.
#include <gtest/gtest.h>

#include "common/sha256.h"
#include "daemon/publish/github_releases.h"
#include "tests/unit/daemon/publish/publish_test_util.h"

namespace farm::publish {
namespace {

using testing::FakeHttpClient;
using testing::FakeSleeper;
using testing::MakeResponse;
using testing::WriteWheel;

constexpr char kPublishedToken[] = "ghp_publishedReleaseToken012345678";
constexpr char kPublishedRepo[] = "acme/kernels";
constexpr char kWheel[] = "w-1.0+cu130-py3-none-any.whl";

std::string AssetJson(int64_t id, const std::string& name, const std::string& sha) {
  return R"({"id":)" + std::to_string(id) + R"(,"name":")" + name +
         R"(","state":"uploaded","digest":"sha256:)" + sha + R"("})";
}

class PublishedReleaseTest : public ::testing::Test {
 protected:
  PublishedReleaseTest()
      : fake_(&clock_),
        sleeper_(clock_),
        http_(fake_, clock_, sleeper_, httpc::GitHubRetryDefaults()),
        client_(http_, {.api_base = "https://api.example.test", .token = kPublishedToken}) {
    path_ = WriteWheel(dir_.path(), kWheel, 2000, 3);
    sha_ = Sha256Hex(testing::ReadAll(path_));
    release_.id = 5;
    release_.tag_name = "v1.0";
    release_.draft = false;
    release_.upload_url =
        "https://uploads.example.test/repos/acme/kernels/releases/5/assets"
        "{?name,label}";
  }

  int CountMethod(const std::string& method) {
    int n = 0;
    for (const auto& r : fake_.requests()) n += r.method == method;
    return n;
  }

  farm::testing::FakeClock clock_;
  FakeHttpClient fake_;
  FakeSleeper sleeper_;
  httpc::RetryingHttpClient http_;
  GitHubReleasesClient client_;
  farm::testing::ScopedTempDir dir_;
  std::string path_;
  std::string sha_;
  GitHubRelease release_;
};

TEST_F(PublishedReleaseTest, ReadsTheImmutableFieldOfTheReleaseObject) {
  fake_.Push(MakeResponse(200, R"([{"id":5,"tag_name":"v1.0","draft":false,"immutable":true},)"
                               R"({"id":6,"tag_name":"v2.0","draft":false}])"));
  fake_.Push(MakeResponse(200, R"([{"id":6,"tag_name":"v2.0","draft":false}])"));
  auto locked = client_.FindRelease(kPublishedRepo, "v1.0");
  ASSERT_OK(locked.status());
  ASSERT_TRUE(locked.value().has_value());
  EXPECT_TRUE(locked.value()->immutable);
  EXPECT_TRUE(IsLockedRelease(*locked.value()));
  auto open = client_.FindRelease(kPublishedRepo, "v2.0");
  ASSERT_OK(open.status());
  ASSERT_TRUE(open.value().has_value());
  EXPECT_FALSE(open.value()->immutable);  // absent: not immutable
  EXPECT_FALSE(IsLockedRelease(*open.value()));
  GitHubRelease draft{.draft = true, .immutable = true};
  EXPECT_FALSE(IsLockedRelease(draft));  // drafts take assets whatever the setting
}

TEST_F(PublishedReleaseTest, AMutablePublishedReleaseTakesTheUploadDirectly) {
  fake_.Push(MakeResponse(200, "[" + AssetJson(1, "other.whl", std::string(64, 'b')) + "]"));
  fake_.Push(MakeResponse(201, AssetJson(2, kWheel, sha_)));
  auto up = client_.UploadAsset(kPublishedRepo, release_, {.local_path = path_});
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, AssetOutcome::kUploaded);
  EXPECT_EQ(CountMethod("POST"), 1);
  EXPECT_EQ(CountMethod("PATCH"), 0);  // never flipped back to draft
}

TEST_F(PublishedReleaseTest, ALockedReleaseThatHoldsTheBytesIsAReRunWithoutUpload) {
  release_.immutable = true;
  fake_.Push(MakeResponse(200, "[" + AssetJson(9, kWheel, sha_) + "]"));
  auto up = client_.UploadAsset(kPublishedRepo, release_, {.local_path = path_, .replace = true});
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, AssetOutcome::kAlreadyPresent);
  EXPECT_EQ(up.value().asset.id, 9);
  EXPECT_EQ(fake_.requests().size(), 1u);  // the listing only
}

TEST_F(PublishedReleaseTest, ALockedReleaseRefusesAMissingAssetBeforeAnyUpload) {
  release_.immutable = true;
  fake_.Push(MakeResponse(200, "[]"));
  auto up = client_.UploadAsset(kPublishedRepo, release_, {.local_path = path_});
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.status().code(), StatusCode::kFailedPrecondition);
  for (const std::string& text :
       {std::string(kPublishedRepo), std::string("v1.0"), std::string(kWheel),
        std::string("immutable"), std::string("new tag")}) {
    EXPECT_NE(up.status().message().find(text), std::string::npos) << up.status().message();
  }
  EXPECT_EQ(fake_.requests().size(), 1u);
  EXPECT_EQ(up.status().message().find(kPublishedToken), std::string::npos);
}

TEST_F(PublishedReleaseTest, ALockedReleaseIsNeverTouchedToReplaceDifferentBytes) {
  release_.immutable = true;
  const std::string old_sha(64, 'c');
  fake_.Push(MakeResponse(200, "[" + AssetJson(9, kWheel, old_sha) + "]"));
  auto up = client_.UploadAsset(kPublishedRepo, release_, {.local_path = path_, .replace = true});
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(up.status().message().find("different bytes: " + std::string(kWheel)),
            std::string::npos)
      << up.status().message();
  EXPECT_NE(up.status().message().find("sha256:" + old_sha), std::string::npos);
  EXPECT_EQ(CountMethod("DELETE") + CountMethod("POST") + CountMethod("PATCH"), 0);
}

TEST_F(PublishedReleaseTest, An422ImmutableAnswerFailsAtOnceWithoutRetryOrCleanup) {
  fake_.Push(MakeResponse(200, "[]"));  // the release object did not say it was immutable
  fake_.Push(MakeResponse(422, R"({"message":"Cannot upload assets to an immutable release."})"));
  auto up = client_.UploadAsset(kPublishedRepo, release_, {.local_path = path_});
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(up.status().message().find("release v1.0 of acme/kernels is published and "
                                       "immutable"),
            std::string::npos)
      << up.status().message();
  EXPECT_NE(up.status().message().find(std::string("missing: ") + kWheel), std::string::npos);
  EXPECT_EQ(fake_.requests().size(), 2u);  // one listing, one upload: no retry, no listing
  EXPECT_TRUE(sleeper_.sleeps().empty());
}

TEST(CheckLockedReleaseTest, NamesEveryMissingAndDifferingAssetOrSaysNothingIsNeeded) {
  GitHubRelease release{.id = 5, .tag_name = "v2", .draft = false, .immutable = true};
  const std::string a(64, 'a'), b(64, 'b');
  std::vector<GitHubAsset> assets = {
      {.id = 1,
       .name = "x-1.0+cu130-py3-none-any.whl",
       .state = "uploaded",
       .digest = "sha256:" + a},
      {.id = 2, .name = "y.whl", .state = "uploaded", .digest = "sha256:" + a},
      {.id = 3, .name = "z.whl", .state = "starter"}};
  EXPECT_OK(
      CheckLockedRelease(kPublishedRepo, release, assets, {{"x-1.0+cu130-py3-none-any.whl", a}}));
  EXPECT_OK(CheckLockedRelease(kPublishedRepo, release, assets, {}));
  Status s = CheckLockedRelease(
      kPublishedRepo, release, assets,
      {{"x-1.0+cu130-py3-none-any.whl", a}, {"y.whl", b}, {"z.whl", a}, {"new wheel.whl", a}});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  // A starter left by a failed upload is as good as missing; names are sanitized.
  EXPECT_NE(s.message().find("missing: z.whl, new.wheel.whl"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("different bytes: y.whl (release has sha256:" + a), std::string::npos);
  EXPECT_EQ(s.message().find("x-1.0"), std::string::npos);
  EXPECT_NE(s.message().find("bump the recipe's version"), std::string::npos);
}

TEST(CheckLockedReleaseTest, Only422sThatSayImmutableAreImmutableRejections) {
  EXPECT_TRUE(IsImmutableRejection(
      MakeResponse(422, R"({"message":"Cannot upload assets to an immutable release."})")));
  EXPECT_FALSE(IsImmutableRejection(MakeResponse(
      422, R"({"message":"Validation Failed","errors":[{"code":"already_exists"}]})")));
  EXPECT_FALSE(IsImmutableRejection(MakeResponse(500, "immutable release")));
}

}  // namespace
}  // namespace farm::publish
