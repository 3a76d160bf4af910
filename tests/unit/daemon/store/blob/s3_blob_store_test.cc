// The S3 blob store and client through the real CurlHttpClient against
// tests/fakes/fake_s3.py, which checks every SigV4 signature: writes verified before they
// are uploaded, ranged reads, the bounded cache, multipart uploads and their abort,
// retries on SlowDown and on connection errors, presigned URLs and their expiry.
#include "daemon/store/blob/s3_blob_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/fs.h"
#include "common/httpc/curl_http_client.h"
#include "common/sha256.h"
#include "tests/unit/daemon/publish/publish_test_util.h"

namespace farm::s3 {
namespace {

using httpc::testing::RecordingSleeper;
using publish::testing::FakeServerProcess;

constexpr char kAccessKey[] = "AKIAFAKEFARMTEST0001";
constexpr char kSecret[] = "fakeFarmSecret/ForTheS3BlobStoreTest0123";
constexpr int64_t kMiB = 1 << 20;

bool EmptyDir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_empty(path, ec) && !ec;
}

std::string Bytes(size_t size, uint32_t seed) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    seed = seed * 1103515245u + 12345u;
    out[i] = static_cast<char>(seed >> 24);
  }
  return out;
}

class S3BlobStoreTest : public ::testing::Test {
 protected:
  S3BlobStoreTest()
      : server_("fake_s3.py", {"--bucket", "wheels", "--access-key", kAccessKey, "--secret-key",
                               kSecret, "--region", "eu-central-1", "--list-page-size", "2"}),
        sleeper_(/*cap_ms=*/20) {}

  S3Config Config(const std::string& secret = kSecret) {
    return {.endpoint = server_.base_url(),
            .region = "eu-central-1",
            .bucket = "wheels",
            .credentials = {kAccessKey, secret, ""}};
  }

  std::unique_ptr<store::BlobStore> Open(const std::string& name, S3BlobStoreOptions o = {}) {
    o.prefix = "farm/blobs";
    o.work_dir = dir_.path() + "/" + name;
    auto opened = OpenS3BlobStore(Config(), o, std::make_unique<httpc::CurlHttpClient>(), sleeper_,
                                  sleeper_, Fast());
    EXPECT_OK(opened.status());
    return opened.ok() ? std::move(opened).value() : nullptr;
  }

  static RetryLimits Fast() { return {.max_attempts = 4, .base_backoff_ms = 10}; }

  Status Write(store::BlobStore& blobs, const std::string& data,
               const store::BlobWriter::Check& check = nullptr) {
    FARM_ASSIGN_OR_RETURN(auto w,
                          blobs.BeginWrite(static_cast<int64_t>(data.size()), Sha256Hex(data)));
    for (size_t at = 0; at < data.size(); at += kMiB) {
      FARM_RETURN_IF_ERROR(w->Append(std::string_view(data).substr(at, kMiB)));
    }
    return w->Commit(check);
  }

  // The fake's record of "farm/blobs/ab/<sha>": its sha256, or "" when absent.
  std::string StoredSha(const std::string& sha) {
    auto state = server_.State().as_object();
    auto* obj = state["objects"].as_object().if_contains("wheels/farm/blobs/" + sha.substr(0, 2) +
                                                         "/" + sha);
    return obj ? std::string(obj->as_object().at("sha256").as_string()) : "";
  }

  // Moves the fake's clock `seconds` ahead.
  void Advance(int seconds) {
    httpc::CurlHttpClient http;
    auto r = http.Send({.method = "POST",
                        .url = server_.base_url() + "/_control/advance",
                        .body = "{\"seconds\": " + std::to_string(seconds) + "}"});
    ASSERT_TRUE(r.ok() && r->status == 200);
  }

  static std::string ReadAllOf(store::BlobReader& reader) {
    std::string all, chunk;
    for (int i = 0; i < 100000; ++i) {
      EXPECT_OK(reader.Read(3000, &chunk));
      if (chunk.empty()) break;
      all += chunk;
    }
    return all;
  }

  farm::testing::ScopedTempDir dir_;
  FakeServerProcess server_;
  RecordingSleeper sleeper_;
};

TEST_F(S3BlobStoreTest, AVerifiedBlobIsUploadedOnceAndReadBackInRanges) {
  ASSERT_FALSE(server_.base_url().empty());
  auto blobs = Open("a");
  std::string data = Bytes(20'000, 1);
  std::string sha = Sha256Hex(data);
  std::string checked;
  ASSERT_OK(Write(*blobs, data, [&](const std::string& path) {
    checked = fs::ReadFile(path).value();
    EXPECT_EQ(server_.Counter("put"), 0);  // the check runs before the upload
    return Status::Ok();
  }));
  EXPECT_EQ(checked, data);
  EXPECT_EQ(StoredSha(sha), sha);
  EXPECT_TRUE(blobs->Contains(sha));

  // A second farmd (no cache) streams it from S3 in 4 KiB ranges, from any offset.
  S3BlobStoreOptions small;
  small.read_chunk_bytes = 4096;
  auto other = Open("b", small);
  EXPECT_TRUE(other->Contains(sha));
  auto reader = other->OpenRead(sha, 1234);
  ASSERT_OK(reader.status());
  EXPECT_EQ((*reader)->size(), 20'000);
  int64_t gets = server_.Counter("get");
  EXPECT_EQ(ReadAllOf(**reader), data.substr(1234));
  EXPECT_EQ(server_.Counter("get") - gets, 5);  // ceil(18766 / 4096)
  EXPECT_EQ(other->OpenRead(sha, 20'001).status().code(), StatusCode::kInvalidArgument);
  auto path = other->LocalPath(sha);
  ASSERT_OK(path.status());
  EXPECT_EQ(fs::ReadFile(*path).value(), data);

  // Writing the same content again (a crash before the record, then a retry) uploads
  // nothing: the object of that name is there already.
  ASSERT_OK(Write(*other, data));
  EXPECT_EQ(server_.Counter("put"), 1);

  ASSERT_OK(other->Remove(sha));
  EXPECT_EQ(StoredSha(sha), "");
  EXPECT_FALSE(other->Contains(sha));
  EXPECT_EQ(other->OpenRead(sha, 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(other->LocalPath(sha).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(other->Contains("../../etc/passwd"));
}

TEST_F(S3BlobStoreTest, EmptyBlobsAndFailedChecksUploadNothingWrong) {
  ASSERT_FALSE(server_.base_url().empty());
  auto blobs = Open("a");
  ASSERT_OK(Write(*blobs, ""));
  EXPECT_EQ(StoredSha(Sha256Hex("")), Sha256Hex(""));
  auto other = Open("b");
  auto reader = other->OpenRead(Sha256Hex(""), 0);
  ASSERT_OK(reader.status());
  EXPECT_EQ(ReadAllOf(**reader), "");
  std::string data = "refused by the check";
  Status s = Write(*blobs, data,
                   [](const std::string&) { return Status::FailedPrecondition("no kernels"); });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StoredSha(Sha256Hex(data)), "");
  EXPECT_EQ(server_.Counter("put"), 1);
  EXPECT_TRUE(EmptyDir(dir_.path() + "/a/tmp"));
}

TEST_F(S3BlobStoreTest, LargeBlobsGoUpInPartsAndAFailedPartAbortsTheUpload) {
  ASSERT_FALSE(server_.base_url().empty());
  S3BlobStoreOptions o;
  o.part_bytes = 5 * kMiB;
  o.multipart_threshold = 5 * kMiB;
  o.cache_bytes = 12 * kMiB;
  auto blobs = Open("a", o);
  std::string data = Bytes(11 * kMiB + 7, 2);
  ASSERT_OK(Write(*blobs, data));
  EXPECT_EQ(StoredSha(Sha256Hex(data)), Sha256Hex(data));
  EXPECT_EQ(server_.Counter("initiate"), 1);
  EXPECT_EQ(server_.Counter("part"), 3);
  EXPECT_EQ(server_.Counter("complete"), 1);

  server_.FailNext(R"({"method": "PUT", "status": 500, "code": "InternalError", "times": 20})");
  std::string second = Bytes(6 * kMiB, 3);
  Status s = Write(*blobs, second);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(server_.Counter("abort"), 1);
  EXPECT_EQ(StoredSha(Sha256Hex(second)), "");
  EXPECT_TRUE(server_.State().as_object()["uploads"].as_object().empty());
  // The cache holds at most 12 MiB: the 11 MiB blob stays, nothing else got in.
  EXPECT_TRUE(EmptyDir(dir_.path() + "/a/tmp"));
}

TEST_F(S3BlobStoreTest, UploadsAbandonedADayAgoAreAbortedAtOpenAndYoungerOnesKept) {
  ASSERT_FALSE(server_.base_url().empty());
  httpc::CurlHttpClient curl;
  S3Client client(Config(), curl, sleeper_, sleeper_, Fast());
  std::vector<std::string> old_ids;
  for (int i = 0; i < 3; ++i) {  // two pages of two
    auto id = client.CreateMultipartUpload("farm/blobs/ab/crashed-" + std::to_string(i));
    ASSERT_OK(id.status());
    old_ids.push_back(*id);
  }
  auto other = client.CreateMultipartUpload("elsewhere/not-ours");
  ASSERT_OK(other.status());
  // A day passes on the fake's clock; requests are signed as of then.
  Advance(25 * 3600);
  farm::testing::FakeClock later(sleeper_.NowUnixMs() + 25 * 3600 * 1000LL);
  S3Client late_client(Config(), curl, later, sleeper_, Fast());
  auto young = late_client.CreateMultipartUpload("farm/blobs/ab/in-progress");
  ASSERT_OK(young.status());
  S3BlobStoreOptions o;
  o.prefix = "farm/blobs";
  o.work_dir = dir_.path() + "/late";
  auto opened = OpenS3BlobStore(Config(), o, std::make_unique<httpc::CurlHttpClient>(), later,
                                sleeper_, Fast());
  ASSERT_OK(opened.status());
  EXPECT_EQ(server_.Counter("abort"), 3);
  auto uploads = server_.State().as_object()["uploads"].as_object();
  EXPECT_EQ(uploads.size(), 2u);
  EXPECT_TRUE(uploads.contains(*other));
  EXPECT_TRUE(uploads.contains(*young));
}

TEST_F(S3BlobStoreTest, TheFakeRefusesSmallPartsAsS3Does) {
  ASSERT_FALSE(server_.base_url().empty());
  httpc::CurlHttpClient curl;
  S3Client client(Config(), curl, sleeper_, sleeper_, Fast());
  std::string file = dir_.path() + "/two-mib";
  ASSERT_OK(fs::WriteFileAtomic(file, Bytes(2 * kMiB, 4)));
  auto id = client.CreateMultipartUpload("small/parts");
  ASSERT_OK(id.status());
  auto one = client.UploadPart("small/parts", *id, 1, file, 0, kMiB);
  auto two = client.UploadPart("small/parts", *id, 2, file, kMiB, kMiB);
  ASSERT_OK(one.status());
  ASSERT_OK(two.status());
  Status s = client.CompleteMultipartUpload("small/parts", *id, {*one, *two});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("EntityTooSmall"), std::string::npos) << s.ToString();
  ASSERT_OK(client.AbortMultipartUpload("small/parts", *id));
  EXPECT_EQ(client.UploadPart("small/parts", *id, 3, file, 0, 10).status().code(),
            StatusCode::kNotFound);  // NoSuchUpload
}

TEST_F(S3BlobStoreTest, SlowDownIsRetriedWithBackoffAndGivenUpOnWithinTheLimits) {
  ASSERT_FALSE(server_.base_url().empty());
  auto blobs = Open("a");
  server_.FailNext(R"({"method": "PUT", "status": 503, "code": "SlowDown", "times": 2})");
  std::string data = "slow down, then store";
  ASSERT_OK(Write(*blobs, data));
  EXPECT_EQ(StoredSha(Sha256Hex(data)), Sha256Hex(data));
  EXPECT_EQ(server_.Counter("slowdown"), 2);
  auto sleeps = sleeper_.sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_GE(sleeps[1], 10);  // the second wait is at least half of twice the base

  server_.FailNext(R"({"method": "PUT", "status": 503, "code": "SlowDown", "times": 50})");
  Status s = Write(*blobs, "never gets through");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("SlowDown"), std::string::npos) << s.ToString();
  EXPECT_EQ(sleeper_.sleeps().size(), 2u + 3u);  // four attempts, three waits
}

TEST(S3RateLimitTest, TheFakesRateLimitAnswersSlowDownAndTheClientWaitsItOut) {
  FakeServerProcess server(
      "fake_s3.py", {"--bucket", "wheels", "--access-key", kAccessKey, "--secret-key", kSecret,
                     "--max-requests-per-second", "2"});
  ASSERT_FALSE(server.base_url().empty());
  RecordingSleeper sleeper(/*cap_ms=*/2000);  // these waits are slept for real
  httpc::CurlHttpClient curl;
  S3Client client(
      {.endpoint = server.base_url(), .bucket = "wheels", .credentials = {kAccessKey, kSecret, ""}},
      curl, sleeper, sleeper, {.max_attempts = 8, .base_backoff_ms = 400});
  // Five quick requests span at most two seconds, so one second gets three: a SlowDown.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(client.HeadObject("absent/" + std::to_string(i)).status().code(),
              StatusCode::kNotFound);
  }
  EXPECT_GE(server.Counter("slowdown"), 1);
  EXPECT_EQ(static_cast<int64_t>(sleeper.sleeps().size()), server.Counter("slowdown"));
}

TEST_F(S3BlobStoreTest, AStoreOpenedLaterLearnsTheBucketsBlobsFromItsListing) {
  ASSERT_FALSE(server_.base_url().empty());
  auto blobs = Open("a");
  std::vector<std::string> shas;
  for (int i = 0; i < 3; ++i) {
    std::string data = "blob number " + std::to_string(i);
    ASSERT_OK(Write(*blobs, data));
    shas.push_back(Sha256Hex(data));
  }
  // Objects outside the store's naming are not taken for blobs.
  httpc::CurlHttpClient curl;
  S3Client client(Config(), curl, sleeper_, sleeper_, Fast());
  std::string stray = dir_.path() + "/stray";
  ASSERT_OK(fs::WriteFileAtomic(stray, "x"));
  ASSERT_OK(client.PutObject("farm/blobs/" + shas[0], stray, 1, Sha256Hex("x")));
  int64_t lists = server_.Counter("list");
  auto later = Open("b");
  EXPECT_EQ(server_.Counter("list") - lists, 2);  // four keys, two a page
  int64_t heads = server_.Counter("head");
  for (const auto& sha : shas) EXPECT_TRUE(later->Contains(sha));
  EXPECT_EQ(server_.Counter("head"), heads);
  EXPECT_FALSE(later->Contains(Sha256Hex("never stored")));
  EXPECT_EQ(server_.Counter("head"), heads + 1);
}

TEST_F(S3BlobStoreTest, ALostAnswerToAnUploadIsRetriedIntoTheSameSingleObject) {
  ASSERT_FALSE(server_.base_url().empty());
  auto blobs = Open("a");
  server_.FailNext(R"({"method": "PUT", "drop_response": true})");
  std::string data = "stored, but the answer was lost";
  ASSERT_OK(Write(*blobs, data));
  EXPECT_EQ(server_.Counter("put"), 2);
  EXPECT_EQ(StoredSha(Sha256Hex(data)), Sha256Hex(data));
  EXPECT_EQ(server_.State().as_object()["objects"].as_object().size(), 1u);
}

TEST_F(S3BlobStoreTest, ConnectionErrorsAreRetriedAndReported) {
  httpc::CurlHttpClient curl;
  S3Config closed = Config();
  closed.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  S3Client client(closed, curl, sleeper_, sleeper_, Fast());
  auto head = client.HeadObject("x");
  EXPECT_EQ(head.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(sleeper_.sleeps().size(), 3u);
}

TEST_F(S3BlobStoreTest, WrongCredentialsAreRefusedWithoutLeakingTheSecret) {
  ASSERT_FALSE(server_.base_url().empty());
  httpc::CurlHttpClient curl;
  S3Client wrong(Config("notTheSecretKeyAtAll0123456789"), curl, sleeper_, sleeper_, Fast());
  int64_t total = 0;
  auto head = wrong.GetRange("k", 0, 1, &total);
  EXPECT_EQ(head.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(head.status().message().find("SignatureDoesNotMatch"), std::string::npos);
  EXPECT_EQ(head.status().message().find("notTheSecret"), std::string::npos);
  S3Config unknown = Config();
  unknown.credentials.access_key_id = "AKIAUNKNOWN";
  S3Client stranger(unknown, curl, sleeper_, sleeper_, Fast());
  auto put = stranger.DeleteObject("k");
  EXPECT_EQ(put.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(put.message().find("InvalidAccessKeyId"), std::string::npos) << put.ToString();
  EXPECT_EQ(server_.Counter("auth_failures"), 2);
}

TEST_F(S3BlobStoreTest, PresignedUrlsServeTheBlobUntilTheyExpire) {
  ASSERT_FALSE(server_.base_url().empty());
  auto blobs = Open("a");
  std::string data = Bytes(3000, 5);
  std::string sha = Sha256Hex(data);
  ASSERT_OK(Write(*blobs, data));
  auto url = blobs->PresignedUrl(sha, "attn_example-0.1.0+cu130-py3-none-any.whl", 60);
  ASSERT_OK(url.status());
  EXPECT_EQ(url->find(kSecret), std::string::npos);
  httpc::CurlHttpClient curl;
  auto got = curl.Send({.url = *url});
  ASSERT_OK(got.status());
  EXPECT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(got->body, data);
  EXPECT_EQ(got->headers.GetOr("Content-Disposition", ""),
            "attachment; filename=\"attn_example-0.1.0+cu130-py3-none-any.whl\"");
  std::string tampered = *url;
  tampered.replace(tampered.find("X-Amz-Expires=60"), 16, "X-Amz-Expires=99");
  EXPECT_EQ(curl.Send({.url = tampered})->status, 403);
  EXPECT_NE(curl.Send({.url = tampered})->body.find("SignatureDoesNotMatch"), std::string::npos);
  Advance(61);
  auto expired = curl.Send({.url = *url});
  EXPECT_EQ(expired->status, 403);
  EXPECT_NE(expired->body.find("Request has expired"), std::string::npos) << expired->body;
}

}  // namespace
}  // namespace farm::s3
