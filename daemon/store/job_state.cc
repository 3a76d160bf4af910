#include "daemon/store/job_state.h"

namespace farm::store {

std::string_view JobStateName(JobState state) {
  switch (state) {
    case kJobPending:
      return "JOB_PENDING";
    case kJobRunning:
      return "JOB_RUNNING";
    case kJobSucceeded:
      return "JOB_SUCCEEDED";
    case kJobFailed:
      return "JOB_FAILED";
    case kJobCancelled:
      return "JOB_CANCELLED";
  }
  return static_cast<int>(state) == 0 ? "JOB_STATE_UNSPECIFIED" : "";
}

std::string_view BuildStateName(BuildState state) {
  switch (state) {
    case kBuildQueued:
      return "BUILD_QUEUED";
    case kBuildRunning:
      return "BUILD_RUNNING";
    case kBuildSucceeded:
      return "BUILD_SUCCEEDED";
    case kBuildFailed:
      return "BUILD_FAILED";
    case kBuildCancelled:
      return "BUILD_CANCELLED";
  }
  return static_cast<int>(state) == 0 ? "BUILD_STATE_UNSPECIFIED" : "";
}

bool IsTerminal(int job_state) {
  return job_state == kJobSucceeded || job_state == kJobFailed || job_state == kJobCancelled;
}

}  // namespace farm::store
