// HfHubClient over 127.0.0.1 against tests/fakes/fake_hf.py through the real
// httpc::CurlHttpClient: repo creation, basic and multipart LFS uploads, commits that must not
// be duplicated after a lost response, rate limits and token redaction.
#include "daemon/publish/hf_hub.h"

#include <gtest/gtest.h>

#include "common/httpc/curl_http_client.h"
#include "common/sha256.h"
#include "tests/unit/daemon/publish/publish_test_util.h"

namespace farm::publish {
namespace {

using testing::FakeServerProcess;
using testing::LogCapture;
using testing::RecordingSleeper;
using testing::WriteWheel;

constexpr char kHubToken[] = "hf_fakeToken0123456789abcdefXYZ";
constexpr char kHubRepo[] = "acme/attention-kernels";
constexpr int kMultipartThreshold = 64 * 1024;
constexpr int kChunk = 16 * 1024;

class HfFakeServerTest : public ::testing::Test {
 protected:
  HfFakeServerTest()
      : server_("fake_hf.py",
                {"--token", kHubToken, "--multipart-threshold", std::to_string(kMultipartThreshold),
                 "--chunk-size", std::to_string(kChunk)}),
        sleeper_(/*cap_ms=*/50),
        http_(curl_, sleeper_, sleeper_, FastOptions()),
        client_(http_, {.endpoint = server_.base_url(), .token = kHubToken}) {}

  static httpc::RetryOptions FastOptions() {
    httpc::RetryOptions o = httpc::HfRetryDefaults();
    o.server_error_base_ms = 10;
    return o;
  }

  void SetUp() override {
    ASSERT_FALSE(server_.base_url().empty());
    ASSERT_OK(client_.CreateRepo(kHubRepo, /*private_repo=*/false));
  }

  HfUploadRequest Request(const std::string& local_path, const std::string& wheel) {
    HfUploadRequest r;
    r.repo_id = kHubRepo;
    r.local_path = local_path;
    r.path_in_repo = RenderHfPath("build/{variant}/{wheel}",
                                  HfKernelVariant("2.8", "12.8", "linux_x86_64"), wheel);
    return r;
  }

  void ExpectStored(const std::string& path_in_repo, const std::string& local_path) {
    auto info = client_.GetPathInfo(kHubRepo, "main", path_in_repo);
    ASSERT_OK(info.status());
    ASSERT_TRUE(info.value().has_value()) << path_in_repo << " is not in the repo";
    EXPECT_EQ(info.value()->lfs_sha256, Sha256Hex(testing::ReadAll(local_path)));
  }

  farm::testing::ScopedTempDir dir_;
  FakeServerProcess server_;
  httpc::CurlHttpClient curl_;
  RecordingSleeper sleeper_;
  httpc::RetryingHttpClient http_;
  HfHubClient client_;
};

TEST_F(HfFakeServerTest, CreateRepoIsIdempotent) {
  ASSERT_OK(client_.CreateRepo(kHubRepo, false));  // 409 the second time: fine
  EXPECT_EQ(server_.Counter("creates"), 2);
}

TEST_F(HfFakeServerTest, BasicUploadCommitsOnceAndIsSkippedTheSecondTime) {
  std::string wheel = "pkg-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl";
  std::string path = WriteWheel(dir_.path(), wheel, 20'000, 1);
  auto up = client_.UploadFile(Request(path, wheel));
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, HfOutcome::kCommitted);
  EXPECT_FALSE(up.value().commit_oid.empty());
  ExpectStored("build/torch28-cxx11-cu128-x86_64-linux/" + wheel, path);
  EXPECT_EQ(server_.Counter("basic_puts"), 1);
  EXPECT_EQ(server_.Counter("part_puts"), 0);
  EXPECT_EQ(server_.Counter("verifies"), 1);
  EXPECT_EQ(server_.Counter("commits"), 1);

  auto again = client_.UploadFile(Request(path, wheel));
  ASSERT_OK(again.status());
  EXPECT_EQ(again.value().outcome, HfOutcome::kAlreadyPresent);
  EXPECT_EQ(server_.Counter("commits"), 1);
  EXPECT_EQ(server_.Counter("basic_puts"), 1);
}

TEST_F(HfFakeServerTest, MultipartUploadPutsEveryPartAndCompletes) {
  std::string wheel = "big-1.0-cp312-cp312-linux_x86_64.whl";
  const int size = 100 * 1024 + 123;  // 7 parts of 16 KiB, the last one short
  std::string path = WriteWheel(dir_.path(), wheel, size, 2);
  auto up = client_.UploadFile(Request(path, wheel));
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, HfOutcome::kCommitted);
  EXPECT_EQ(server_.Counter("part_puts"), (size + kChunk - 1) / kChunk);
  EXPECT_EQ(server_.Counter("completions"), 1);
  EXPECT_EQ(server_.Counter("basic_puts"), 0);
  EXPECT_EQ(server_.Counter("commits"), 1);
  ExpectStored("build/torch28-cxx11-cu128-x86_64-linux/" + wheel, path);
}

TEST_F(HfFakeServerTest, LostCommitResponseIsResolvedByTheHeadCheck) {
  std::string wheel = "c-1.0-cp312-cp312-linux_x86_64.whl";
  std::string path = WriteWheel(dir_.path(), wheel, 9'000, 3);
  server_.FailNext(R"({"method":"POST","path":"/commit/","drop_response":true})");
  auto up = client_.UploadFile(Request(path, wheel));
  ASSERT_OK(up.status());
  EXPECT_EQ(up.value().outcome, HfOutcome::kCommitted);
  EXPECT_FALSE(up.value().commit_oid.empty());
  EXPECT_EQ(server_.Counter("commit_posts"), 1);  // never sent twice
  EXPECT_EQ(server_.Counter("commits"), 1);
  ExpectStored("build/torch28-cxx11-cu128-x86_64-linux/" + wheel, path);
}

TEST_F(HfFakeServerTest, CommitThatFailedIsRetriedOnceTheHeadProvesItDidNotLand) {
  std::string wheel = "d-1.0-cp312-cp312-linux_x86_64.whl";
  std::string path = WriteWheel(dir_.path(), wheel, 9'000, 4);
  server_.FailNext(R"({"method":"POST","path":"/commit/","status":503})");
  auto up = client_.UploadFile(Request(path, wheel));
  ASSERT_OK(up.status());
  EXPECT_EQ(server_.Counter("commit_posts"), 2);
  EXPECT_EQ(server_.Counter("commits"), 1);
}

TEST_F(HfFakeServerTest, RateLimitHeaderAndRetryAfterAreHonoured) {
  std::string wheel = "e-1.0-cp312-cp312-linux_x86_64.whl";
  std::string path = WriteWheel(dir_.path(), wheel, 9'000, 5);
  server_.FailNext(R"({"method":"POST","path":"/preupload/","status":429,)"
                   R"("ratelimit":"\"api\";r=0;t=55"})");
  server_.FailNext(R"({"method":"POST","path":"/info/lfs/objects/batch","status":429,)"
                   R"("retry_after":4})");
  ASSERT_OK(client_.UploadFile(Request(path, wheel)).status());
  auto sleeps = sleeper_.sleeps();
  ASSERT_GE(sleeps.size(), 2u);
  EXPECT_EQ(sleeps[0], 55'000);
  EXPECT_EQ(sleeps[1], 4'000);
  EXPECT_EQ(server_.Counter("commits"), 1);
}

TEST_F(HfFakeServerTest, OtherBytesAtThePathAreAConflictUnlessReplaceIsAsked) {
  std::string wheel = "f-1.0-cp312-cp312-linux_x86_64.whl";
  std::string first = WriteWheel(dir_.path(), wheel, 9'000, 6);
  ASSERT_OK(client_.UploadFile(Request(first, wheel)).status());
  farm::testing::ScopedTempDir other;
  std::string second = WriteWheel(other.path(), wheel, 9'500, 7);
  auto conflict = client_.UploadFile(Request(second, wheel));
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(conflict.status().message().find("conflict"), std::string::npos);
  HfUploadRequest replace = Request(second, wheel);
  replace.replace = true;
  ASSERT_OK(client_.UploadFile(replace).status());
  ExpectStored(replace.path_in_repo, second);
  EXPECT_EQ(server_.Counter("commits"), 2);
}

TEST_F(HfFakeServerTest, BadTokenFailsWithARedactedMessage) {
  const std::string wrong = "hf_wrongToken9876543210zyxwvu";
  LogCapture logs;
  HfHubClient bad(http_, {.endpoint = server_.base_url(), .token = wrong});
  std::string path = WriteWheel(dir_.path(), "g-1.0-py3-none-any.whl", 1000, 8);
  HfUploadRequest r = Request(path, "g-1.0-py3-none-any.whl");
  auto up = bad.UploadFile(r);
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(up.status().message().find("Invalid credentials"), std::string::npos);
  EXPECT_EQ(up.status().ToString().find(wrong), std::string::npos);
  EXPECT_EQ(logs.text().find(wrong), std::string::npos);
  EXPECT_EQ(logs.text().find(kHubToken), std::string::npos);
}

}  // namespace
}  // namespace farm::publish
