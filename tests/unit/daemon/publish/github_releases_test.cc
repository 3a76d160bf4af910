// GitHubReleasesClient against a scripted FakeHttpClient (headers, redaction) and, over
// 127.0.0.1, against tests/fakes/fake_github.py through the real httpc::CurlHttpClient.
#include "daemon/publish/github_releases.h"

#include <gtest/gtest.h>

#include "common/httpc/curl_http_client.h"
#include "common/sha256.h"
#include "tests/unit/daemon/publish/publish_test_util.h"

namespace farm::publish {
namespace {

using testing::FakeHttpClient;
using testing::FakeServerProcess;
using testing::FakeSleeper;
using testing::LogCapture;
using testing::MakeResponse;
using testing::RecordingSleeper;
using testing::WriteWheel;

constexpr char kToken[] = "ghp_fakeToken0123456789abcdefXYZ";
constexpr char kRepo[] = "acme/kernels";

// ---- scripted HTTP ----------------------------------------------------------------

TEST(GitHubReleasesUnitTest, SendsTheDocumentedHeadersAndStreamsTheFile) {
  farm::testing::FakeClock clock;
  FakeHttpClient fake(&clock);
  FakeSleeper sleeper(clock);
  httpc::RetryingHttpClient http(fake, clock, sleeper, httpc::GitHubRetryDefaults());
  GitHubOptions options;
  options.api_base = "https://api.example.test";
  options.token = kToken;
  GitHubReleasesClient client(http, options);
  farm::testing::ScopedTempDir dir;
  std::string path = WriteWheel(dir.path(), "w-1.0-py3-none-any.whl", 1000, 1);
  std::string sha = Sha256Hex(testing::ReadAll(path));
  fake.Push(MakeResponse(200, "[]"));  // list assets
  fake.Push(MakeResponse(201, R"({"id":7,"name":"w-1.0-py3-none-any.whl","state":"uploaded",)"
                              R"("digest":"sha256:)" +
                                  sha + R"("})"));
  GitHubRelease release;
  release.id = 5;
  release.upload_url =
      "https://uploads.example.test/repos/acme/kernels/releases/5/assets{?name,label}";
  auto result = client.UploadAsset(kRepo, release, {.local_path = path});
  ASSERT_OK(result.status());
  EXPECT_EQ(result.value().outcome, AssetOutcome::kUploaded);
  auto requests = fake.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.headers.GetOr("authorization", ""), std::string("Bearer ") + kToken);
    EXPECT_EQ(r.headers.GetOr("accept", ""), "application/vnd.github+json");
    EXPECT_EQ(r.headers.GetOr("x-github-api-version", ""), "2022-11-28");
    EXPECT_FALSE(r.headers.GetOr("user-agent", "").empty());
  }
  const httpc::HttpRequest& upload = requests[1];
  EXPECT_EQ(upload.method, "POST");
  EXPECT_EQ(upload.url,
            "https://uploads.example.test/repos/acme/kernels/releases/5/assets"
            "?name=w-1.0-py3-none-any.whl");
  EXPECT_EQ(upload.headers.GetOr("content-type", ""), "application/zip");
  EXPECT_EQ(upload.body_file, path);
  EXPECT_EQ(upload.body_length, 1000);
}

TEST(GitHubReleasesUnitTest, TokenEchoedByTheServerIsRedacted) {
  farm::testing::FakeClock clock;
  FakeHttpClient fake(&clock);
  FakeSleeper sleeper(clock);
  httpc::RetryingHttpClient http(fake, clock, sleeper, httpc::GitHubRetryDefaults());
  GitHubReleasesClient client(http, {.api_base = "https://api.example.test", .token = kToken});
  LogCapture logs;
  fake.Push(
      MakeResponse(401, std::string(R"({"message":"Bad credentials for )") + kToken + R"("})"));
  auto found = client.FindRelease(kRepo, "v1");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(found.status().message().find("Bad credentials"), std::string::npos);
  EXPECT_EQ(found.status().message().find(kToken), std::string::npos);
  EXPECT_EQ(logs.text().find(kToken), std::string::npos);
}

// ---- the real fake over 127.0.0.1 ---------------------------------------------------

class GitHubFakeServerTest : public ::testing::Test {
 protected:
  explicit GitHubFakeServerTest(std::vector<std::string> fake_flags = {})
      : server_("fake_github.py", FakeArgs(std::move(fake_flags))),
        sleeper_(/*cap_ms=*/50),
        http_(curl_, sleeper_, sleeper_, FastOptions()),
        client_(http_, {.api_base = server_.base_url(), .token = kToken}) {}

  static std::vector<std::string> FakeArgs(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--token", kToken});
    return flags;
  }

  static httpc::RetryOptions FastOptions() {
    httpc::RetryOptions o = httpc::GitHubRetryDefaults();
    o.mutating_spacing_ms = 0;  // real spacing is asserted in the unit tests
    o.server_error_base_ms = 10;
    return o;
  }

  GitHubRelease Draft(const std::string& tag = "v2.2.0-build7") {
    auto r = client_.GetOrCreateDraftRelease({.repo = kRepo, .tag = tag, .body = "notes"});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : GitHubRelease();
  }

  // Assets of the release as the fake stores them: name -> digest (or "state:<s>").
  std::map<std::string, std::string> StoredAssets(int64_t release_id) {
    auto assets = client_.ListAssets(kRepo, release_id);
    EXPECT_TRUE(assets.ok()) << assets.status().ToString();
    std::map<std::string, std::string> out;
    if (!assets.ok()) return out;
    for (const auto& a : assets.value()) {
      out[a.name] = a.state == "uploaded" ? a.digest : "state:" + a.state;
    }
    return out;
  }

  farm::testing::ScopedTempDir dir_;
  FakeServerProcess server_;
  httpc::CurlHttpClient curl_;
  RecordingSleeper sleeper_;
  httpc::RetryingHttpClient http_;
  GitHubReleasesClient client_;
};

TEST_F(GitHubFakeServerTest, FullPublishFlow) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft();
  EXPECT_TRUE(draft.draft);
  // Drafts are found by listing: a second call reuses the draft instead of failing.
  GitHubRelease again = Draft();
  EXPECT_EQ(again.id, draft.id);
  EXPECT_EQ(server_.Counter("release_creates"), 1);

  std::string w1 =
      WriteWheel(dir_.path(), "pkg-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl", 300'000, 1);
  std::string w2 =
      WriteWheel(dir_.path(), "pkg-2.2.0+cu128torch2.8-cp311-cp311-linux_x86_64.whl", 200'000, 2);
  for (const auto& path : {w1, w2}) {
    auto up = client_.UploadAsset(kRepo, draft, {.local_path = path});
    ASSERT_OK(up.status());
    EXPECT_EQ(up.value().outcome, AssetOutcome::kUploaded);
    EXPECT_EQ(up.value().asset.digest, "sha256:" + Sha256Hex(testing::ReadAll(path)));
    EXPECT_EQ(up.value().asset.content_type, "application/zip");
    // The bytes GitHub serves are the bytes of the file.
    httpc::HttpRequest get;
    get.url = up.value().asset.browser_download_url;
    auto body = curl_.Send(get);
    ASSERT_OK(body.status());
    EXPECT_EQ(body.value().body, testing::ReadAll(path));
  }
  ASSERT_OK(client_.SetReleaseNotes(kRepo, draft.id, "| table |").status());
  auto published = client_.PublishRelease(kRepo, draft.id);
  ASSERT_OK(published.status());
  EXPECT_FALSE(published.value().draft);
  EXPECT_EQ(published.value().body, "| table |");
  EXPECT_EQ(StoredAssets(draft.id).size(), 2u);
  EXPECT_EQ(server_.Counter("upload_posts"), 2);
}

TEST_F(GitHubFakeServerTest, SameDigestIsSkippedWithoutASecondUpload) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft();
  std::string w = WriteWheel(dir_.path(), "a-1.0-py3-none-any.whl", 5000, 3);
  ASSERT_OK(client_.UploadAsset(kRepo, draft, {.local_path = w}).status());
  auto second = client_.UploadAsset(kRepo, draft, {.local_path = w});
  ASSERT_OK(second.status());
  EXPECT_EQ(second.value().outcome, AssetOutcome::kAlreadyPresent);
  EXPECT_EQ(server_.Counter("upload_posts"), 1);
}

TEST_F(GitHubFakeServerTest, DifferentDigestIsAConflictUnlessReplaceIsAsked) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft();
  std::string old_file = WriteWheel(dir_.path(), "a-1.0-py3-none-any.whl", 5000, 3);
  ASSERT_OK(client_.UploadAsset(kRepo, draft, {.local_path = old_file}).status());
  farm::testing::ScopedTempDir other;
  std::string new_file = WriteWheel(other.path(), "a-1.0-py3-none-any.whl", 6000, 4);
  std::string old_digest = "sha256:" + Sha256Hex(testing::ReadAll(old_file));
  std::string new_digest = "sha256:" + Sha256Hex(testing::ReadAll(new_file));

  auto conflict = client_.UploadAsset(kRepo, draft, {.local_path = new_file});
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(conflict.status().message().find("conflict"), std::string::npos);
  EXPECT_NE(conflict.status().message().find(old_digest), std::string::npos);
  EXPECT_EQ(StoredAssets(draft.id)["a-1.0-py3-none-any.whl"], old_digest);

  auto replaced = client_.UploadAsset(kRepo, draft, {.local_path = new_file, .replace = true});
  ASSERT_OK(replaced.status());
  EXPECT_EQ(replaced.value().outcome, AssetOutcome::kReplaced);
  auto stored = StoredAssets(draft.id);
  EXPECT_EQ(stored.size(), 1u);  // no temporary asset left behind
  EXPECT_EQ(stored["a-1.0-py3-none-any.whl"], new_digest);
}

TEST_F(GitHubFakeServerTest, FailedReplacementKeepsTheGoodCopy) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft();
  std::string old_file = WriteWheel(dir_.path(), "a-1.0-py3-none-any.whl", 5000, 3);
  ASSERT_OK(client_.UploadAsset(kRepo, draft, {.local_path = old_file}).status());
  std::string old_digest = "sha256:" + Sha256Hex(testing::ReadAll(old_file));
  farm::testing::ScopedTempDir other;
  std::string new_file = WriteWheel(other.path(), "a-1.0-py3-none-any.whl", 6000, 4);
  // Every upload of the replacement fails upstream, leaving starters.
  server_.FailNext(
      R"({"method":"POST","path":"/api/uploads/","status":502,"starter":true,"times":3})");
  auto failed = client_.UploadAsset(kRepo, draft, {.local_path = new_file, .replace = true});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  auto stored = StoredAssets(draft.id);
  EXPECT_EQ(stored["a-1.0-py3-none-any.whl"], old_digest);
  EXPECT_EQ(server_.Counter("asset_deletes"), 3);  // the starters, never the good copy

  // Interrupted between "delete old" and "rename": the next call finishes the rename.
  std::string new_digest = "sha256:" + Sha256Hex(testing::ReadAll(new_file));
  std::string temp = TemporaryAssetName("a-1.0-py3-none-any.whl", new_digest.substr(7));
  auto staged = client_.UploadAsset(kRepo, draft, {.local_path = new_file, .name = temp});
  ASSERT_OK(staged.status());
  auto assets = client_.ListAssets(kRepo, draft.id);
  ASSERT_OK(assets.status());
  for (const auto& a : assets.value()) {
    if (a.name == "a-1.0-py3-none-any.whl") ASSERT_OK(client_.DeleteAsset(kRepo, a.id));
  }
  auto resumed = client_.UploadAsset(kRepo, draft, {.local_path = new_file});
  ASSERT_OK(resumed.status());
  EXPECT_EQ(resumed.value().outcome, AssetOutcome::kReplaced);
  stored = StoredAssets(draft.id);
  EXPECT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored["a-1.0-py3-none-any.whl"], new_digest);
}

TEST_F(GitHubFakeServerTest, StarterLeftByA502IsDeletedThenTheUploadRetried) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft();
  std::string w = WriteWheel(dir_.path(), "b-1.0-py3-none-any.whl", 7000, 5);
  server_.FailNext(R"({"method":"POST","path":"/api/uploads/","status":502,"starter":true})");
  auto up = client_.UploadAsset(kRepo, draft, {.local_path = w});
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, AssetOutcome::kUploaded);
  EXPECT_EQ(server_.Counter("upload_posts"), 2);
  EXPECT_EQ(server_.Counter("asset_deletes"), 1);
  auto stored = StoredAssets(draft.id);
  EXPECT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored["b-1.0-py3-none-any.whl"], "sha256:" + Sha256Hex(testing::ReadAll(w)));
}

TEST_F(GitHubFakeServerTest, LostUploadResponseIsNotUploadedTwice) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft();
  std::string w = WriteWheel(dir_.path(), "c-1.0-py3-none-any.whl", 7000, 6);
  server_.FailNext(R"({"method":"POST","path":"/api/uploads/","drop_response":true})");
  auto up = client_.UploadAsset(kRepo, draft, {.local_path = w});
  ASSERT_OK(up.status());
  EXPECT_EQ(server_.Counter("upload_posts"), 1);
  EXPECT_EQ(StoredAssets(draft.id).size(), 1u);
}

TEST_F(GitHubFakeServerTest, LostCreateResponseMakesNoDuplicateDraft) {
  ASSERT_FALSE(server_.base_url().empty());
  server_.FailNext(R"({"method":"POST","path":"/releases$","drop_response":true})");
  GitHubRelease draft = Draft("v9");
  EXPECT_GT(draft.id, 0);
  EXPECT_EQ(server_.Counter("release_creates"), 1);
}

TEST_F(GitHubFakeServerTest, RateLimited429HonoursRetryAfter) {
  ASSERT_FALSE(server_.base_url().empty());
  server_.FailNext(R"({"method":"GET","path":"/releases$","status":429,"retry_after":3,)"
                   R"("body":{"message":"too many"}})");
  auto found = client_.FindRelease(kRepo, "v1");
  ASSERT_OK(found.status());
  EXPECT_FALSE(found.value().has_value());
  EXPECT_EQ(sleeper_.sleeps(), std::vector<int64_t>{3000});
}

TEST_F(GitHubFakeServerTest, SecondaryLimitWithoutHeadersWaitsAMinuteThenBacksOff) {
  ASSERT_FALSE(server_.base_url().empty());
  server_.FailNext(
      R"({"method":"POST","path":"/releases$","status":403,"secondary":true,"times":2})");
  GitHubRelease draft = Draft("v3");
  EXPECT_GT(draft.id, 0);
  EXPECT_EQ(sleeper_.sleeps(), (std::vector<int64_t>{60'000, 120'000}));
  EXPECT_EQ(server_.Counter("release_creates"), 1);
}

TEST_F(GitHubFakeServerTest, SpentPrimaryQuotaWaitsForTheReset) {
  ASSERT_FALSE(server_.base_url().empty());
  server_.FailNext(R"({"method":"GET","path":"/releases$","status":403,"exhaust":20})");
  ASSERT_OK(client_.FindRelease(kRepo, "v1").status());
  auto sleeps = sleeper_.sleeps();
  ASSERT_FALSE(sleeps.empty());
  EXPECT_GE(sleeps[0], 18'000);
  EXPECT_LE(sleeps[0], 22'000);
}

TEST_F(GitHubFakeServerTest, BadTokenFailsWithARedactedMessage) {
  ASSERT_FALSE(server_.base_url().empty());
  const std::string wrong = "ghp_wrongToken9876543210zyxwvu";
  LogCapture logs;
  GitHubReleasesClient bad(http_, {.api_base = server_.base_url(), .token = wrong});
  auto r = bad.GetOrCreateDraftRelease({.repo = kRepo, .tag = "v1"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(r.status().message().find("401"), std::string::npos);
  EXPECT_EQ(r.status().ToString().find(wrong), std::string::npos);
  EXPECT_EQ(logs.text().find(wrong), std::string::npos);
  EXPECT_EQ(logs.text().find(kToken), std::string::npos);
}

TEST_F(GitHubFakeServerTest, APublishedReleaseTakesNewAssetsAndStaysPublished) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease draft = Draft("v5");
  std::string w1 = WriteWheel(dir_.path(), "p-5.0+cu130-cp311-cp311-linux_x86_64.whl", 5000, 11);
  std::string w2 = WriteWheel(dir_.path(), "p-5.0+cu128-cp311-cp311-linux_x86_64.whl", 5000, 12);
  ASSERT_OK(client_.UploadAsset(kRepo, draft, {.local_path = w1}).status());
  ASSERT_OK(client_.PublishRelease(kRepo, draft.id).status());
  auto published = client_.GetOrCreateDraftRelease({.repo = kRepo, .tag = "v5"});
  ASSERT_OK(published.status());
  EXPECT_FALSE(published.value().draft);
  EXPECT_FALSE(published.value().immutable);
  auto up = client_.UploadAsset(kRepo, published.value(), {.local_path = w2});
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, AssetOutcome::kUploaded);
  auto again = client_.UploadAsset(kRepo, published.value(), {.local_path = w1});
  ASSERT_OK(again.status());
  EXPECT_EQ(again.value().outcome, AssetOutcome::kAlreadyPresent);
  EXPECT_EQ(StoredAssets(draft.id).size(), 2u);
  EXPECT_EQ(server_.Counter("upload_posts"), 2);
  EXPECT_EQ(server_.Counter("upload_posts_published:" + std::to_string(draft.id)), 1);
  auto found = client_.FindRelease(kRepo, "v5");
  ASSERT_OK(found.status());
  EXPECT_FALSE(found.value()->draft);
}

class ImmutableGitHubFakeTest : public GitHubFakeServerTest {
 protected:
  explicit ImmutableGitHubFakeTest(std::vector<std::string> flags = {"--immutable"})
      : GitHubFakeServerTest(std::move(flags)) {}

  // A release published with one wheel (`w1_`) on it; `w2_` is another build's wheel.
  GitHubRelease PublishedWithOneWheel() {
    GitHubRelease draft = Draft("v6");
    EXPECT_FALSE(draft.immutable);  // drafts are not locked
    w1_ = WriteWheel(dir_.path(), "q-6.0+cu130-cp311-cp311-linux_x86_64.whl", 5000, 21);
    w2_ = WriteWheel(dir_.path(), "q-6.0+cu128-cp311-cp311-linux_x86_64.whl", 5000, 22);
    EXPECT_OK(client_.UploadAsset(kRepo, draft, {.local_path = w1_}).status());
    EXPECT_OK(client_.PublishRelease(kRepo, draft.id).status());
    auto found = client_.FindRelease(kRepo, "v6");
    EXPECT_TRUE(found.ok() && found.value().has_value());
    return found.ok() && found.value() ? *found.value() : GitHubRelease();
  }

  std::string w1_, w2_;
};

class UnflaggedImmutableGitHubFakeTest : public ImmutableGitHubFakeTest {
 protected:
  UnflaggedImmutableGitHubFakeTest()
      : ImmutableGitHubFakeTest({"--immutable", "--immutable-unflagged"}) {}
};

TEST_F(ImmutableGitHubFakeTest, NothingIsSentToAnImmutableReleaseAndARerunSucceeds) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease release = PublishedWithOneWheel();
  EXPECT_TRUE(release.immutable);
  auto rerun = client_.UploadAsset(kRepo, release, {.local_path = w1_, .replace = true});
  ASSERT_OK(rerun.status());
  EXPECT_EQ(rerun.value().outcome, AssetOutcome::kAlreadyPresent);
  auto added = client_.UploadAsset(kRepo, release, {.local_path = w2_});
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(added.status().message().find("missing: q-6.0+cu128-cp311"), std::string::npos)
      << added.status().message();
  EXPECT_EQ(server_.Counter("upload_posts"), 1);  // the draft's only
  EXPECT_EQ(server_.Counter("upload_posts_published:" + std::to_string(release.id)), 0);
  EXPECT_EQ(StoredAssets(release.id).size(), 1u);
}

TEST_F(UnflaggedImmutableGitHubFakeTest, The422IsAConflictWithoutRetries) {
  ASSERT_FALSE(server_.base_url().empty());
  GitHubRelease release = PublishedWithOneWheel();
  EXPECT_FALSE(release.immutable);  // the field was not there
  auto added = client_.UploadAsset(kRepo, release, {.local_path = w2_});
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(added.status().message().find("release v6 of acme/kernels is published and "
                                          "immutable"),
            std::string::npos)
      << added.status().message();
  EXPECT_EQ(server_.Counter("upload_posts_published:" + std::to_string(release.id)), 1);
  EXPECT_EQ(server_.Counter("asset_deletes"), 0);
  EXPECT_EQ(StoredAssets(release.id).size(), 1u);
}

TEST(GitHubFakeRestartTest, StateFileKeepsReleasesAcrossARestart) {
  farm::testing::ScopedTempDir dir;
  std::string state = dir.path() + "/github-state.json";
  std::string w = WriteWheel(dir.path(), "r-1.0-py3-none-any.whl", 4000, 9);
  RecordingSleeper sleeper(50);
  httpc::CurlHttpClient curl;
  httpc::RetryOptions options = httpc::GitHubRetryDefaults();
  options.mutating_spacing_ms = 0;
  httpc::RetryingHttpClient http(curl, sleeper, sleeper, options);
  int64_t release_id = 0;
  {
    FakeServerProcess first("fake_github.py", {"--token", kToken, "--state-file", state});
    ASSERT_FALSE(first.base_url().empty());
    GitHubReleasesClient client(http, {.api_base = first.base_url(), .token = kToken});
    auto draft = client.GetOrCreateDraftRelease({.repo = kRepo, .tag = "v1"});
    ASSERT_OK(draft.status());
    release_id = draft.value().id;
    ASSERT_OK(client.UploadAsset(kRepo, draft.value(), {.local_path = w}).status());
  }
  FakeServerProcess second("fake_github.py", {"--token", kToken, "--state-file", state});
  ASSERT_FALSE(second.base_url().empty());
  GitHubReleasesClient client(http, {.api_base = second.base_url(), .token = kToken});
  auto draft = client.GetOrCreateDraftRelease({.repo = kRepo, .tag = "v1"});
  ASSERT_OK(draft.status());
  EXPECT_EQ(draft.value().id, release_id);
  auto again = client.UploadAsset(kRepo, draft.value(), {.local_path = w});
  ASSERT_OK(again.status());
  EXPECT_EQ(again.value().outcome, AssetOutcome::kAlreadyPresent);
  EXPECT_EQ(second.Counter("upload_posts"), 0);
  EXPECT_EQ(second.Counter("release_creates"), 0);
}

}  // namespace
}  // namespace farm::publish
