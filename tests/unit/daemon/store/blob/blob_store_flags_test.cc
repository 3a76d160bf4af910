// Parsing --blob-store URLs and finding S3 credentials without ever printing them.
#include "daemon/store/blob/blob_store_flags.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/log.h"
#include "tests/support/test_util.h"

namespace farm::s3 {
namespace {

TEST(BlobStoreFlagsTest, ParsesBucketAndPrefix) {
  auto plain = ParseS3Url("s3://wheel-farm");
  ASSERT_OK(plain.status());
  EXPECT_EQ(plain->bucket, "wheel-farm");
  EXPECT_EQ(plain->prefix, "");
  auto nested = ParseS3Url("s3://wheel.farm-1/blobs/prod/");
  ASSERT_OK(nested.status());
  EXPECT_EQ(nested->bucket, "wheel.farm-1");
  EXPECT_EQ(nested->prefix, "blobs/prod");
  for (const char* bad :
       {"", "wheel-farm", "s3://", "s3://ab", "s3://Upper", "s3://-dash", "s3://b_underscore",
        "s3://bucket/a//b", "s3://bucket/../x", "s3://bucket/./x", "https://bucket/x"}) {
    EXPECT_EQ(ParseS3Url(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  std::string long_name(64, 'a');
  EXPECT_EQ(ParseS3Url("s3://" + long_name).status().code(), StatusCode::kInvalidArgument);
}

TEST(BlobStoreFlagsTest, CredentialsComeFromSecretsBeforeTheEnvironmentAndAreRedacted) {
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_SESSION_TOKEN");
  EXPECT_EQ(FindS3Credentials({}).status().code(), StatusCode::kFailedPrecondition);
  ::setenv("AWS_ACCESS_KEY_ID", "AKIAENVIRONMENT0001", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "envSecretKeyForTheFlagsTest0123", 1);
  auto from_env = FindS3Credentials({});
  ASSERT_OK(from_env.status());
  EXPECT_EQ(from_env->access_key_id, "AKIAENVIRONMENT0001");
  auto from_file = FindS3Credentials({{"AWS_ACCESS_KEY_ID", "AKIAFILE00000001"},
                                      {"AWS_SECRET_ACCESS_KEY", "fileSecretKeyForTheFlagsTest9"},
                                      {"AWS_SESSION_TOKEN", "sessionTokenForTheFlagsTest77"}});
  ASSERT_OK(from_file.status());
  EXPECT_EQ(from_file->secret_access_key, "fileSecretKeyForTheFlagsTest9");
  EXPECT_EQ(from_file->session_token, "sessionTokenForTheFlagsTest77");
  std::string redacted = log::Redact(
      "key fileSecretKeyForTheFlagsTest9 token "
      "sessionTokenForTheFlagsTest77 env "
      "envSecretKeyForTheFlagsTest0123");
  EXPECT_EQ(redacted.find("FlagsTest"), std::string::npos) << redacted;
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
}

TEST(BlobStoreFlagsTest, FlagsSetTheStoreAndTheRedirect) {
  Flags flags(BlobStoreFlags());
  const char* argv[] = {"farmd",
                        "--blob-store",
                        "s3://bucket/p",
                        "--s3-endpoint",
                        "http://127.0.0.1:1",
                        "--s3-region",
                        "eu-west-1",
                        "--index-redirect",
                        "--index-redirect-ttl-s",
                        "60"};
  ASSERT_OK(flags.Parse(10, const_cast<char**>(argv)));
  BlobStoreSettings settings;
  int64_t ttl = 0;
  ASSERT_OK(BlobStoreSettingsFromFlags(flags, &settings, &ttl));
  EXPECT_EQ(settings.url, "s3://bucket/p");
  EXPECT_EQ(settings.region, "eu-west-1");
  EXPECT_EQ(ttl, 60);
  Flags bad(BlobStoreFlags());
  const char* bad_argv[] = {"farmd", "--index-redirect-ttl-s", "0"};
  ASSERT_OK(bad.Parse(3, const_cast<char**>(bad_argv)));
  EXPECT_EQ(BlobStoreSettingsFromFlags(bad, &settings, &ttl).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::s3
