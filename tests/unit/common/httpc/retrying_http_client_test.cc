#include "common/httpc/retrying_http_client.h"

#include <gtest/gtest.h>

#include "common/httpc/http_util.h"
#include "tests/unit/common/httpc/fake_http.h"

namespace farm::httpc {
namespace {

using testing::FakeHttpClient;
using testing::FakeSleeper;
using testing::MakeResponse;

constexpr int64_t kNowMs = 1'700'000'000'000;

RetryDecision Decide(const Result<HttpResponse>& outcome, int attempt = 1, int hits = 0,
                     Idempotency idem = Idempotency::kIdempotent,
                     RetryOptions options = GitHubRetryDefaults()) {
  return DecideRetry(outcome, attempt, hits, idem, kNowMs, options);
}

TEST(DecideRetryTest, RetryAfterSecondsIsHonoured) {
  auto d = Decide(MakeResponse(429, "", {{"Retry-After", "7"}}));
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.wait_ms, 7000);
}

TEST(DecideRetryTest, RetryAfterHttpDateIsHonoured) {
  // kNowMs is 2023-11-14T22:13:20Z; the date is 30 s later.
  auto d = Decide(MakeResponse(429, "", {{"retry-after", "Tue, 14 Nov 2023 22:13:50 GMT"}}));
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.wait_ms, 30'000);
}

TEST(DecideRetryTest, PrimaryLimitWaitsUntilResetPlusMargin) {
  auto d = Decide(MakeResponse(403, R"({"message":"API rate limit exceeded"})",
                               {{"x-ratelimit-remaining", "0"},
                                {"x-ratelimit-reset", std::to_string(kNowMs / 1000 + 120)}}));
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.wait_ms, 120'000 + GitHubRetryDefaults().reset_margin_ms);
}

TEST(DecideRetryTest, SecondaryLimitWithoutHeadersWaitsAMinuteThenDoubles) {
  auto secondary = MakeResponse(403, R"({"message":"You have exceeded a secondary rate limit"})");
  EXPECT_EQ(Decide(secondary, 1, 0).wait_ms, 60'000);
  EXPECT_EQ(Decide(secondary, 2, 1).wait_ms, 120'000);
  EXPECT_EQ(Decide(secondary, 3, 2).wait_ms, 240'000);
  // Rate-limited requests are retried even when not idempotent: nothing was done.
  EXPECT_TRUE(Decide(secondary, 1, 0, Idempotency::kNotIdempotent).retry);
}

TEST(DecideRetryTest, HfRateLimitHeaderGivesTheReset) {
  auto d = Decide(MakeResponse(429, "", {{"RateLimit", "\"api\";r=0;t=55"}}), 1, 0,
                  Idempotency::kIdempotent, HfRetryDefaults());
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.wait_ms, 55'000);
}

TEST(DecideRetryTest, PlainForbiddenIsNotRetried) {
  EXPECT_FALSE(Decide(MakeResponse(403, R"({"message":"Resource not accessible"})")).retry);
  EXPECT_FALSE(Decide(MakeResponse(404)).retry);
  EXPECT_FALSE(Decide(MakeResponse(422)).retry);
  EXPECT_FALSE(Decide(MakeResponse(200)).retry);
}

TEST(DecideRetryTest, ServerErrorsBackOffOnlyWhenIdempotent) {
  auto bad_gateway = MakeResponse(502);
  EXPECT_EQ(Decide(bad_gateway, 1).wait_ms, 1000);
  EXPECT_EQ(Decide(bad_gateway, 2).wait_ms, 2000);
  EXPECT_EQ(Decide(bad_gateway, 4).wait_ms, 8000);
  EXPECT_FALSE(Decide(bad_gateway, 1, 0, Idempotency::kNotIdempotent).retry);
  Result<HttpResponse> lost = Status::Unavailable("connection reset");
  EXPECT_TRUE(Decide(lost).retry);
  EXPECT_FALSE(Decide(lost, 1, 0, Idempotency::kNotIdempotent).retry);
}

TEST(DecideRetryTest, BoundedByAttemptsAndMaxWait) {
  EXPECT_FALSE(Decide(MakeResponse(503), GitHubRetryDefaults().max_attempts).retry);
  RetryOptions options;
  options.max_wait_ms = 10'000;
  EXPECT_FALSE(Decide(MakeResponse(429, "", {{"Retry-After", "3600"}}), 1, 0,
                      Idempotency::kIdempotent, options)
                   .retry);
}

class RetryingHttpClientTest : public ::testing::Test {
 protected:
  RetryingHttpClientTest() : fake_(&clock_), sleeper_(clock_) {}

  HttpRequest Request(const std::string& method) {
    HttpRequest r;
    r.method = method;
    r.url = "https://api.example.test/x";
    return r;
  }

  farm::testing::FakeClock clock_{kNowMs};
  FakeHttpClient fake_;
  FakeSleeper sleeper_;
};

TEST_F(RetryingHttpClientTest, MutatingRequestsAreSpacedAtLeastOneSecond) {
  RetryingHttpClient http(fake_, clock_, sleeper_, GitHubRetryDefaults());
  fake_.SetFallback([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(201); });
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(http.Send(Request("POST"), Idempotency::kNotIdempotent).status());
  ASSERT_OK(http.Send(Request("GET"), Idempotency::kIdempotent).status());
  auto times = fake_.send_times();
  ASSERT_EQ(times.size(), 4u);
  EXPECT_GE(times[1] - times[0], 1000);
  EXPECT_GE(times[2] - times[1], 1000);
  EXPECT_EQ(times[3], times[2]);  // reads are not spaced
}

TEST_F(RetryingHttpClientTest, RetriesAfter429AndReturnsTheSuccess) {
  RetryingHttpClient http(fake_, clock_, sleeper_, GitHubRetryDefaults());
  fake_.Push(MakeResponse(429, "", {{"Retry-After", "2"}}));
  fake_.Push(MakeResponse(200, "ok"));
  auto resp = http.Send(Request("GET"), Idempotency::kIdempotent);
  ASSERT_OK(resp.status());
  EXPECT_EQ(resp.value().body, "ok");
  EXPECT_EQ(fake_.requests().size(), 2u);
  EXPECT_EQ(sleeper_.sleeps(), std::vector<int64_t>{2000});
}

TEST_F(RetryingHttpClientTest, ExhaustedQuotaBlocksTheNextRequestUntilReset) {
  RetryingHttpClient http(fake_, clock_, sleeper_, GitHubRetryDefaults());
  fake_.Push(MakeResponse(
      200, "",
      {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(kNowMs / 1000 + 30)}}));
  fake_.Push(MakeResponse(200));
  ASSERT_OK(http.Send(Request("GET"), Idempotency::kIdempotent).status());
  ASSERT_OK(http.Send(Request("GET"), Idempotency::kIdempotent).status());
  auto times = fake_.send_times();
  ASSERT_EQ(times.size(), 2u);
  EXPECT_GE(times[1] - times[0], 30'000);
}

TEST_F(RetryingHttpClientTest, NonIdempotentServerErrorIsHandedBack) {
  RetryingHttpClient http(fake_, clock_, sleeper_, GitHubRetryDefaults());
  fake_.Push(MakeResponse(502));
  auto resp = http.Send(Request("POST"), Idempotency::kNotIdempotent);
  ASSERT_OK(resp.status());
  EXPECT_EQ(resp.value().status, 502);
  EXPECT_EQ(fake_.requests().size(), 1u);
}

TEST_F(RetryingHttpClientTest, PersistentServerErrorStopsAfterMaxAttempts) {
  RetryOptions options = GitHubRetryDefaults();
  options.max_attempts = 4;
  RetryingHttpClient http(fake_, clock_, sleeper_, options);
  fake_.SetFallback([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(503); });
  auto resp = http.Send(Request("GET"), Idempotency::kIdempotent);
  ASSERT_OK(resp.status());
  EXPECT_EQ(resp.value().status, 503);
  EXPECT_EQ(fake_.requests().size(), 4u);
  EXPECT_EQ(sleeper_.sleeps(), (std::vector<int64_t>{1000, 2000, 4000}));
}

TEST(HttpHeadersTest, NamesAreCaseInsensitive) {
  HttpHeaders h;
  h.Append("ETag", "\"a\"");
  h.Append("etag", "\"b\"");
  EXPECT_EQ(h.GetOr("ETAG", ""), "\"a\", \"b\"");
  EXPECT_FALSE(h.Get("x-missing").has_value());
}

TEST(PublishUtilTest, RateLimitedForbiddenMapsToResourceExhausted) {
  auto secondary = MakeResponse(403, R"({"message":"You have exceeded a secondary rate limit"})");
  EXPECT_EQ(HttpError("x", secondary).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(HttpError("x", MakeResponse(403, "{}")).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(HttpError("x", MakeResponse(401, "{}")).code(), StatusCode::kUnauthenticated);
}

TEST(PublishUtilTest, EncodingHelpers) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(PercentEncode("a+b c/d"), "a%2Bb%20c%2Fd");
  EXPECT_EQ(EncodePath("build/x y/z.whl"), "build/x%20y/z.whl");
  EXPECT_EQ(UrlForLog("https://s3.test/p?X-Amz-Signature=secret"), "https://s3.test/p");
  HttpHeaders h;
  h.Set("Link", "<https://a/?page=1>; rel=\"prev\", <https://a/?page=3>; rel=\"next\"");
  EXPECT_EQ(NextLink(h), "https://a/?page=3");
  EXPECT_EQ(NextLink(HttpHeaders()), "");
}

}  // namespace
}  // namespace farm::httpc
