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

}  // namespace
}  // namespace farm::log
