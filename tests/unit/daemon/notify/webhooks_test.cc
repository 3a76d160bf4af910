#include "daemon/notify/webhooks.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace farm::notify {
namespace {

const auth::Secrets kSecrets = {{"WEBHOOK_URL_OPS_ROOM", "https://hooks.example/T000/secret"},
                                {"WEBHOOK_URL_FTP", "ftp://example/secret"}};

TEST(ParseWebhookTargetTest, NameKindsAndTheUrlFromTheSecrets) {
  auto t = ParseWebhookTarget("ops-room", kSecrets);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "ops-room");
  EXPECT_EQ(t->url, "https://hooks.example/T000/secret");
  // By default every kind: built wheels, refusals, torch proofs and requests too.
  EXPECT_EQ(t->events.size(), 6u);
  t = ParseWebhookTarget("ops-room:wheel_built,build_failed", kSecrets);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->events, (std::set<coverage::EventKind>{coverage::EventKind::kWheelBuilt,
                                                      coverage::EventKind::kBuildFailed}));
  t = ParseWebhookTarget("ops-room:build_failed", kSecrets);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->events, std::set<coverage::EventKind>{coverage::EventKind::kBuildFailed});
  EXPECT_EQ(WebhookSecretKey("ops-room"), "WEBHOOK_URL_OPS_ROOM");
}

TEST(ParseWebhookTargetTest, RefusalsNeverHoldTheUrl) {
  for (const char* flag : {"Ops", "ops room", "", "ops-room:wheel", "missing", "ftp"}) {
    auto t = ParseWebhookTarget(flag, kSecrets);
    EXPECT_FALSE(t.ok()) << flag;
    EXPECT_EQ(t.status().message().find("T000"), std::string::npos) << t.status().ToString();
    EXPECT_EQ(t.status().message().find("example"), std::string::npos) << t.status().ToString();
  }
  EXPECT_NE(ParseWebhookTarget("missing", kSecrets).status().message().find("WEBHOOK_URL_MISSING"),
            std::string::npos);
}

TEST(WebhookPayloadTest, SlackTextPlusTheEventsFields) {
  coverage::Event e{.kind = coverage::EventKind::kWheelValidated,
                    .id = "wheel_validated:ab",
                    .package = "pkg",
                    .version = "1.0",
                    .build_id = 3,
                    .job_id = 4,
                    .wheel = "pkg-1.0-py3-none-any.whl",
                    .sha256 = "ab",
                    .time_ms = 1000};
  auto v = boost::json::parse(WebhookPayload(e, "https://farm.example/"));
  const auto& o = v.as_object();
  EXPECT_EQ(o.at("text").as_string(),
            "pkg 1.0: pkg-1.0-py3-none-any.whl validated (job 4) <https://farm.example/#/job/4>");
  EXPECT_EQ(o.at("event").as_string(), "wheel_validated");
  EXPECT_EQ(o.at("id").as_string(), "wheel_validated:ab");
  EXPECT_EQ(o.at("url").as_string(), "https://farm.example/#/job/4");
  EXPECT_EQ(o.at("build_id").as_int64(), 3);
  EXPECT_EQ(o.at("time").as_string(), "1970-01-01T00:00:01.000Z");
  auto relative = boost::json::parse(WebhookPayload(e, ""));
  EXPECT_EQ(relative.as_object().at("url").as_string(), "/#/job/4");
}

TEST(WebhookPayloadTest, WhatABuildWroteCannotBecomeSlackMarkup) {
  EXPECT_EQ(EscapeSlackText("<!channel> & <http://evil.example|the farm> <@U123>"),
            "&lt;!channel&gt; &amp; &lt;http://evil.example|the farm&gt; &lt;@U123&gt;");
  coverage::Event e{.kind = coverage::EventKind::kBuildFailed,
                    .id = "build_failed:7",
                    .package = "pkg<!here>",
                    .version = "1.0",
                    .build_id = 7,
                    .cause = "<!channel> see <https://evil.example/x|farm logs> & retry",
                    .time_ms = 1000};
  auto v = boost::json::parse(WebhookPayload(e, "https://farm.example/?a=1&b=2"));
  std::string text(v.as_object().at("text").as_string());
  for (const char* markup : {"<!", "<@", "<https://evil"}) {
    EXPECT_EQ(text.find(markup), std::string::npos) << markup << " in " << text;
  }
  EXPECT_NE(text.find("&lt;!channel&gt; see &lt;https://evil.example/x|farm logs&gt; &amp; retry"),
            std::string::npos)
      << text;
  // The farm's own link is the one piece of markup, its '&' escaped too.
  EXPECT_TRUE(text.ends_with(" <https://farm.example/?a=1&amp;b=2/#/build/7>")) << text;
  // The other fields carry the raw values, for programs.
  EXPECT_EQ(v.as_object().at("cause").as_string(), e.cause);
  EXPECT_EQ(v.as_object().at("package").as_string(), "pkg<!here>");
}

}  // namespace
}  // namespace farm::notify
