#include "daemon/auth/secrets_file.h"

#include <sys/stat.h>

#include "common/fs.h"
#include "common/log.h"
#include "tests/support/test_util.h"

namespace farm::auth {
namespace {

TEST(SecretsFileTest, ReadsKeysAndRegistersThemForRedaction) {
  testing::ScopedTempDir dir;
  std::string path = dir.path() + "/farmd.secrets";
  ASSERT_OK(fs::WriteFileAtomic(path,
                                "# publishing\nGITHUB_TOKEN=ghp_abcdef123456\n\n"
                                "HF_TOKEN = hf_zyxwvu987654\n",
                                0600));
  auto secrets = LoadSecretsFile(path);
  ASSERT_OK(secrets.status());
  EXPECT_EQ(secrets->at("GITHUB_TOKEN"), "ghp_abcdef123456");
  EXPECT_EQ(secrets->at("HF_TOKEN"), "hf_zyxwvu987654");
  EXPECT_EQ(log::Redact("push with ghp_abcdef123456"), "push with [REDACTED]");
}

TEST(SecretsFileTest, RefusesFilesOthersCanReadAndMalformedLinesWithoutEchoingThem) {
  testing::ScopedTempDir dir;
  std::string path = dir.path() + "/farmd.secrets";
  ASSERT_OK(fs::WriteFileAtomic(path, "GITHUB_TOKEN=x\n", 0644));
  EXPECT_EQ(LoadSecretsFile(path).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_OK(fs::WriteFileAtomic(path, "GITHUB_TOKEN=ok\nghp_secretvalue99\n", 0600));
  Status s = LoadSecretsFile(path).status();
  EXPECT_EQ(s.message(), path + ":2: expected KEY=VALUE");
  ASSERT_OK(fs::WriteFileAtomic(path, "AWS_KEY=zzz\n", 0600));
  EXPECT_EQ(LoadSecretsFile(path).status().message(), path + ":1: unknown key \"AWS_KEY\"");
}

TEST(SecretsFileTest, WebhookUrlsAreSecretsNamedByTheirTarget) {
  testing::ScopedTempDir dir;
  std::string path = dir.path() + "/farmd.secrets";
  ASSERT_OK(fs::WriteFileAtomic(
      path, "WEBHOOK_URL_OPS_ROOM=https://hooks.example/T1/webhooksecret1\n", 0600));
  auto secrets = LoadSecretsFile(path);
  ASSERT_OK(secrets.status());
  EXPECT_EQ(secrets->at("WEBHOOK_URL_OPS_ROOM"), "https://hooks.example/T1/webhooksecret1");
  EXPECT_EQ(log::Redact("POST https://hooks.example/T1/webhooksecret1 failed"),
            "POST [REDACTED] failed");
  for (const char* key : {"WEBHOOK_URL_", "WEBHOOK_URL_ops", "WEBHOOK_URL_A-B"}) {
    ASSERT_OK(fs::WriteFileAtomic(path, std::string(key) + "=https://x.example/y\n", 0600));
    EXPECT_EQ(LoadSecretsFile(path).status().code(), StatusCode::kInvalidArgument) << key;
  }
}

}  // namespace
}  // namespace farm::auth
