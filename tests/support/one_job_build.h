// A build of one job, stored and leased the way farmd's API and a worker would: the
// starting point of tests of what happens to a job's wheel (attestation, publication).
// Header-only: the tests that use it link the store themselves.
#ifndef FARM_TESTS_SUPPORT_ONE_JOB_BUILD_H_
#define FARM_TESTS_SUPPORT_ONE_JOB_BUILD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::testing {

// Stores a build of `recipe` (submitted by "t" at 1 ms) whose one job runs `cell` and was
// created at `job_created_ms`, and leases that job to `worker_id` at `now_ms` for a minute.
// Returns the leased job (its build_id names the build); an error where either step fails.
inline Result<store::JobRow> LeaseOneJobBuild(store::Store& store, const farm::v1::Recipe& recipe,
                                              const farm::v1::MatrixCell& cell,
                                              const std::string& worker_id, int64_t now_ms,
                                              int64_t job_created_ms = 0) {
  store::BuildRow build{.recipe_name = recipe.name(),
                        .recipe = recipe.SerializeAsString(),
                        .submitted_by = "t",
                        .created_ms = 1};
  std::vector<store::JobRow> jobs(1);
  jobs[0].cell = cell.SerializeAsString();
  jobs[0].created_ms = job_created_ms;
  FARM_RETURN_IF_ERROR(store.CreateBuild(&build, &jobs));
  auto job = store.AcquireJob(worker_id, now_ms, 60'000, nullptr);
  if (!job.ok()) return job.status();
  if (!*job) return Status::NotFound("the build's job was not leased");
  return **job;
}

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_ONE_JOB_BUILD_H_
