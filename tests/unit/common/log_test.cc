#include "common/log.h"

#include <gtest/gtest.h>

#include <string>

namespace farm::log {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// One test: InitLogging installs a process-wide logger, so the modes run in order.
TEST(LogTest, ComponentIsNamedOnceWhetherOrNotTheMessageNamesIt) {
  static const Options kText{Level::kInfo, false, "farm-worker"};
  InitLogging(kText);
  ::testing::internal::CaptureStderr();
  Info("farm-worker: registered as w-1");
  Info("took job 7 attempt 1");
  Warn("farm-worker:8080 is not the prefix");
  std::string text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(text, "farm-worker: farm-worker: "), 0) << text;
  EXPECT_EQ(Count(text, " farm-worker: registered as w-1\n"), 1) << text;
  EXPECT_EQ(Count(text, " farm-worker: took job 7 attempt 1\n"), 1) << text;
  EXPECT_EQ(Count(text, " farm-worker: farm-worker:8080 is not the prefix\n"), 1) << text;

  static const Options kJson{Level::kInfo, true, "farm-worker"};
  InitLogging(kJson);
  ::testing::internal::CaptureStderr();
  Info("farm-worker: registered as w-1");
  std::string json = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(json, "\"component\":\"farm-worker\""), 1) << json;
  EXPECT_EQ(Count(json, "\"msg\":\"registered as w-1\""), 1) << json;
}

TEST(LogTest, CredentialsInUrlsAreRedactedWhereverTheyStand) {
  EXPECT_EQ(RedactUrlCredentials("http://produser:S3CR3TTOKEN@127.0.0.1:18901/idx/x/ answered 404"),
            "http://[REDACTED]@127.0.0.1:18901/idx/x/ answered 404");
  // A token as the user name, a password holding '@' and ':', several URLs, a quoted one.
  EXPECT_EQ(RedactUrlCredentials("a https://ghp_abc@github.com b \"http://u:p@ss:w@h?q\""),
            "a https://[REDACTED]@github.com b \"http://[REDACTED]@h?q\"");
  // Nothing to redact: no userinfo, an '@' in the path, a mail address.
  for (const char* plain : {"http://host/a@b", "https://h:8080/x", "mail me@example.com",
                            "file:///etc/passwd", "://@"}) {
    EXPECT_EQ(RedactUrlCredentials(plain), plain);
  }
  EXPECT_EQ(Redact("fetch http://u:TOPSECRET@h/ failed"), "fetch http://[REDACTED]@h/ failed");
}

}  // namespace
}  // namespace farm::log
