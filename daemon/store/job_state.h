// The states of a job and of a build, with their one name table. Values mirror
// farm.v1.JobState and farm.v1.BuildState: the store keeps the number (an INTEGER column,
// also matched by number in its SQL), the API and the dashboard print the name.
#ifndef FARM_DAEMON_STORE_JOB_STATE_H_
#define FARM_DAEMON_STORE_JOB_STATE_H_

#include <string_view>

namespace farm::store {

enum JobState : int {
  kJobPending = 1,    // waiting for a worker (or for a required or identical job)
  kJobRunning = 2,    // leased to a worker
  kJobSucceeded = 3,  // built (or reused), its wheels stored
  kJobFailed = 4,     // gave up: the build failed, or its retries ran out
  kJobCancelled = 5,  // someone cancelled it or its build
};

enum BuildState : int {
  kBuildQueued = 1,     // no job has started
  kBuildRunning = 2,    // a job is running or has ended, and not all have
  kBuildSucceeded = 3,  // every job succeeded
  kBuildFailed = 4,     // every job ended and one failed
  kBuildCancelled = 5,  // every job ended, one was cancelled and none failed
};

// Every state, in the order of their values.
inline constexpr JobState kJobStates[] = {kJobPending, kJobRunning, kJobSucceeded, kJobFailed,
                                          kJobCancelled};
inline constexpr BuildState kBuildStates[] = {kBuildQueued, kBuildRunning, kBuildSucceeded,
                                              kBuildFailed, kBuildCancelled};

// The farm.v1 names: "JOB_PENDING" ... "JOB_CANCELLED", "BUILD_QUEUED" ...
// "BUILD_CANCELLED"; "JOB_STATE_UNSPECIFIED" / "BUILD_STATE_UNSPECIFIED" for 0 and ""
// for any other value, as the generated farm.v1 name functions answer.
std::string_view JobStateName(JobState state);
std::string_view BuildStateName(BuildState state);

// Succeeded, failed or cancelled: the job will not run again unless retried.
bool IsTerminal(int job_state);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_JOB_STATE_H_
