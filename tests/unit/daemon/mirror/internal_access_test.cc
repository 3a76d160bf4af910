// farmd's internal secret for its own processes on /upstream/: accepted as a bearer token
// and as the password of HTTP Basic with any user, nothing else; the index URL pip gets;
// and never in a log line.
#include "daemon/mirror/internal_access.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/log.h"
#include "common/provenance/base64.h"
#include "tests/support/test_util.h"

namespace farm::mirror {
namespace {

std::string SecretOf(const InternalAccess& access) {
  auto url = access.IndexUrl("http://127.0.0.1:8080/", "cu128");
  EXPECT_OK(url.status());
  std::string rest = url->substr(std::string("http://farmd:").size());
  return rest.substr(0, rest.find('@'));
}

TEST(InternalAccessTest, TheSecretAsBearerOrBasicPasswordAndNothingElse) {
  auto access = InternalAccess::Generate();
  const std::string secret = SecretOf(*access);
  ASSERT_EQ(secret.size(), 64u);
  EXPECT_EQ(*access->IndexUrl("https://farm.lan:8443", "cu130"),
            "https://farmd:" + secret + "@farm.lan:8443/upstream/pypi/cu130/simple/");
  EXPECT_TRUE(access->Accepts("Bearer " + secret));
  EXPECT_TRUE(access->Accepts("Basic " + provenance::Base64Encode("pip:" + secret)));
  EXPECT_TRUE(access->Accepts("basic " + provenance::Base64Encode(":" + secret)));
  for (const std::string& wrong : std::vector<std::string>{
           "", "Bearer", "Bearer " + secret.substr(1), "Bearer " + secret + "x",
           "Basic " + provenance::Base64Encode(secret), "Basic " + provenance::Base64Encode("x:y"),
           "Basic !!!", "Token " + secret}) {
    EXPECT_FALSE(access->Accepts(wrong)) << wrong;
  }
  // Another farmd process has another secret.
  EXPECT_FALSE(InternalAccess::Generate()->Accepts("Bearer " + secret));
  EXPECT_EQ(log::Redact("pip --index-url http://x:" + secret + "@h/").find(secret),
            std::string::npos);
  EXPECT_EQ(access->IndexUrl("ftp://h", "cu128").status().code(), StatusCode::kInvalidArgument);
}

TEST(InternalAccessTest, BasicPasswords) {
  EXPECT_EQ(*BasicAuthPassword("Basic " + provenance::Base64Encode("u:p:q")), "p:q");
  EXPECT_EQ(BasicAuthPassword("Bearer x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(BasicAuthPassword("Basic " + provenance::Base64Encode("nocolon")).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::mirror
