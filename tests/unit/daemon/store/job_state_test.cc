#include "daemon/store/job_state.h"

#include <set>
#include <string>

#include "farm/v1/types.pb.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

// The API prints these names: they must stay the farm.v1 names, value for value, also for
// values outside the enums (a row from a newer farmd).
TEST(JobStateTest, NamesAreTheApiNamesForEveryValue) {
  for (int v = -2; v <= 8; ++v) {
    EXPECT_EQ(JobStateName(static_cast<JobState>(v)),
              farm::v1::JobState_Name(static_cast<farm::v1::JobState>(v)))
        << v;
    EXPECT_EQ(BuildStateName(static_cast<BuildState>(v)),
              farm::v1::BuildState_Name(static_cast<farm::v1::BuildState>(v)))
        << v;
  }
}

TEST(JobStateTest, EveryStateHasItsOwnName) {
  std::set<std::string> jobs;
  for (JobState s : kJobStates) {
    EXPECT_TRUE(jobs.insert(std::string(JobStateName(s))).second) << JobStateName(s);
  }
  EXPECT_EQ(jobs, (std::set<std::string>{"JOB_PENDING", "JOB_RUNNING", "JOB_SUCCEEDED",
                                         "JOB_FAILED", "JOB_CANCELLED"}));
  std::set<std::string> builds;
  for (BuildState s : kBuildStates) {
    EXPECT_TRUE(builds.insert(std::string(BuildStateName(s))).second) << BuildStateName(s);
  }
  EXPECT_EQ(builds, (std::set<std::string>{"BUILD_QUEUED", "BUILD_RUNNING", "BUILD_SUCCEEDED",
                                           "BUILD_FAILED", "BUILD_CANCELLED"}));
}

TEST(JobStateTest, SucceededFailedAndCancelledAreTerminal) {
  EXPECT_FALSE(IsTerminal(kJobPending));
  EXPECT_FALSE(IsTerminal(kJobRunning));
  EXPECT_TRUE(IsTerminal(kJobSucceeded));
  EXPECT_TRUE(IsTerminal(kJobFailed));
  EXPECT_TRUE(IsTerminal(kJobCancelled));
  EXPECT_FALSE(IsTerminal(0));
  EXPECT_FALSE(IsTerminal(6));
}

}  // namespace
}  // namespace farm::store
