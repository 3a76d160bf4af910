// Signature Version 4 against the values AWS publishes: the "get-vanilla" case of the
// SigV4 test suite (AWS General Reference), and the GET Object (header) and presigned URL
// examples of the S3 API Reference ("Authenticating Requests").
#include "daemon/store/blob/sigv4.h"

#include <gtest/gtest.h>

#include "common/sha256.h"

namespace farm::s3 {
namespace {

constexpr char kEmptySha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kS3DocSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr int64_t kMay24Of2013 = 1369353600;  // 20130524T000000Z

TEST(SigV4Test, GetVanillaFromTheSigV4TestSuite) {
  SignableRequest r{
      .method = "GET",
      .path = "/",
      .headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}},
      .payload_sha256 = kEmptySha};
  std::string canonical = CanonicalRequest(r);
  EXPECT_EQ(canonical, std::string("GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:"
                                   "20150830T123600Z\n\nhost;x-amz-date\n") +
                           kEmptySha);
  std::string scope = CredentialScope("20150830T123600Z", "us-east-1", "service");
  EXPECT_EQ(scope, "20150830/us-east-1/service/aws4_request");
  std::string to_sign = StringToSign("20150830T123600Z", scope, canonical);
  EXPECT_EQ(to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(Signature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T123600Z", "us-east-1",
                      "service", to_sign),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(AmzDate(1440938160), "20150830T123600Z");
}

TEST(SigV4Test, S3GetObjectWithARangeSignedInTheHeader) {
  SignableRequest r{.method = "GET",
                    .path = "/test.txt",
                    .headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"}},
                    .payload_sha256 = kEmptySha};
  std::string auth = SignWithHeader(&r, {"AKIAIOSFODNN7EXAMPLE", kS3DocSecret, ""}, "us-east-1",
                                    "s3", kMay24Of2013);
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(Sha256Hex(CanonicalRequest(r)),
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

TEST(SigV4Test, S3PresignedUrlExample) {
  SignableRequest r{.method = "GET",
                    .path = "/test.txt",
                    .headers = {{"host", "examplebucket.s3.amazonaws.com"}}};
  Presign(&r, {"AKIAIOSFODNN7EXAMPLE", kS3DocSecret, ""}, "us-east-1", "s3", kMay24Of2013, 86400);
  EXPECT_EQ(CanonicalQuery(r.query),
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F"
            "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&"
            "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404&"
            "X-Amz-SignedHeaders=host");
}

TEST(SigV4Test, SessionTokensAreSignedAndOddKeysEncodedOnce) {
  SignableRequest r{.method = "PUT",
                    .path = "/bucket/prefix/ünï cöde+a=b&c",
                    .query = {{"uploadId", "a/b+c="}, {"partNumber", "2"}, {"uploads", ""}},
                    .headers = {{"host", "127.0.0.1:9000"}, {"x-amz-meta-x", "  a   b  "}},
                    .payload_sha256 = kEmptySha};
  std::string auth =
      SignWithHeader(&r, {"AKID", "secret", "token/with+chars"}, "eu-west-1", "s3", kMay24Of2013);
  EXPECT_NE(auth.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-x;"
                      "x-amz-security-token,"),
            std::string::npos)
      << auth;
  std::string canonical = CanonicalRequest(r);
  EXPECT_NE(canonical.find("/bucket/prefix/%C3%BCn%C3%AF%20c%C3%B6de%2Ba%3Db%26c\n"
                           "partNumber=2&uploadId=a%2Fb%2Bc%3D&uploads=\n"),
            std::string::npos)
      << canonical;
  EXPECT_NE(canonical.find("x-amz-meta-x:a b\n"), std::string::npos) << canonical;
  EXPECT_EQ(UriEncode("a b/~._-", true), "a%20b/~._-");
  EXPECT_EQ(UriEncode("a b/~._-", false), "a%20b%2F~._-");
}

}  // namespace
}  // namespace farm::s3
