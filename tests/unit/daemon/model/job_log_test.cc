#include "daemon/model/job_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace farm::model {
namespace {

TEST(LogLinesTest, LevelsPhasesAndFailurePhases) {
  EXPECT_EQ(LineLevel("a.c:3:5: fatal error: x.h: No such file"), "error");
  EXPECT_EQ(LineLevel("error: subprocess-exited-with-error"), "error");
  EXPECT_EQ(LineLevel("Traceback (most recent call last):"), "error");
  EXPECT_EQ(LineLevel("FAILED: build/attn.o"), "error");
  EXPECT_EQ(LineLevel("c++ -Werror -c error_handler.cc"), "");
  EXPECT_EQ(LineLevel("0 errors, 2 warnings"), "");
  EXPECT_EQ(LineLevel("  Building wheel for attn (setup.py): started"), "");
  EXPECT_EQ(LineLevel("x.cu(3): warning #177-D: variable declared"), "warning");
  EXPECT_EQ(LineLevel(std::string(5000, 'e') + " error: in a command line"), "");
  EXPECT_EQ(LinePhase(3, "farm: fetching source (git x y)"), "fetch");
  EXPECT_EQ(LinePhase(3, "farm: checking 2 wheel(s): structure, tags, arch manifest"), "checks");
  EXPECT_EQ(LinePhase(1, "farm: fetching source"), "");  // only the worker's own lines
  EXPECT_EQ(FailurePhase(store::kCauseInfrastructure, "fetching source failed: x"), "fetch");
  EXPECT_EQ(FailurePhase(store::kCauseInfrastructure, "uploading a.whl failed: y"), "upload");
  EXPECT_EQ(FailurePhase(store::kCauseValidationFailed, "a.whl: missing sm_90a"), "checks");
  EXPECT_EQ(FailurePhase(store::kCauseTimedOut, "build exceeded"), "build");
  // A provisioning failure says so, whether it was the recipe's spec or the farm's.
  EXPECT_EQ(FailurePhase(store::kCauseBuildFailed,
                         "provisioning failed (invalid-request): the pins are not a lock"),
            "provision");
  EXPECT_EQ(FailurePhase(store::kCauseInfrastructure,
                         "provisioning failed (upstream-unreachable): HTTP 502"),
            "provision");
  EXPECT_EQ(FailurePhase(store::kCauseLostWorker, "worker lost"), "");
}

TEST(LogLinesTest, WithoutErrorLinesTheLastLinesSpeak) {
  std::vector<store::LogLineRow> tail;
  for (int i = 1; i <= 10; ++i) tail.push_back({i, 1, "step " + std::to_string(i), 0});
  tail.push_back({11, 3, "farm: attempt ended", 0});
  auto lines = MeaningfulLines(tail);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines.front(), "step 5");
  EXPECT_EQ(lines.back(), "step 10");
  EXPECT_TRUE(MeaningfulLines({}).empty());
  auto cut = MeaningfulLines({{1, 2, "error: " + std::string(1000, 'x'), 0}});
  EXPECT_EQ(cut[0].size(), 400u + std::string("…").size());
}

}  // namespace
}  // namespace farm::model
