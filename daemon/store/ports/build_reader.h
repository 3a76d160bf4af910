// BuildReader: reading builds, their jobs, attempts and artifacts, for the API, the
// dashboard and the dispatcher. It changes nothing.
#ifndef FARM_DAEMON_STORE_PORTS_BUILD_READER_H_
#define FARM_DAEMON_STORE_PORTS_BUILD_READER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

// Which builds a list shows; empty fields match every build.
struct BuildFilter {
  std::string recipe_name;
  std::string submitted_by;
  int state = 0;                        // a BuildState value; 0: any
  std::vector<std::string> worker_ids;  // builds with a job that ran on one of these
  bool any_worker = false;              // worker_ids applies (an unknown name matches none)
};

class BuildReader {
 public:
  virtual ~BuildReader() = default;

  virtual Result<BuildRow> GetBuild(int64_t id) = 0;
  // Newest first, ids < before_id (0: from the newest), at most `limit`.
  virtual Result<std::vector<BuildRow>> ListBuilds(int64_t before_id, int limit) = 0;
  // ListBuilds of the builds that match every set field of `filter`.
  virtual Result<std::vector<BuildRow>> ListBuildsMatching(const BuildFilter& filter,
                                                           int64_t before_id, int limit) = 0;
  virtual Result<std::vector<JobRow>> ListJobs(int64_t build_id) = 0;
  // ListJobs of each of `build_ids` (a builds page), by build id; a build without jobs has
  // no entry.
  virtual Result<std::map<int64_t, std::vector<JobRow>>> ListJobsOfBuilds(
      const std::vector<int64_t>& build_ids) = 0;
  virtual Result<JobRow> GetJob(int64_t id) = 0;
  // The newest succeeded job with this build key that has artifacts, if any.
  virtual Result<std::optional<JobRow>> FindSucceededJob(const std::string& build_key) = 0;
  virtual Result<std::vector<AttemptRow>> ListAttempts(int64_t job_id) = 0;
  // ListAttempts of each of `job_ids` (a build's reply), by job id; a job without
  // attempts has no entry.
  virtual Result<std::map<int64_t, std::vector<AttemptRow>>> ListAttemptsOfJobs(
      const std::vector<int64_t>& job_ids) = 0;
  // ListArtifacts of each of `job_ids`, by job id, the same way.
  virtual Result<std::map<int64_t, std::vector<ArtifactRow>>> ListArtifactsOfJobs(
      const std::vector<int64_t>& job_ids) = 0;
  // Pending jobs in dispatch order (priority desc, id asc), at most `limit`.
  virtual Result<std::vector<JobRow>> ListPendingJobs(int limit) = 0;
  // The jobs of `ids` that exist, in no particular order.
  virtual Result<std::vector<JobRow>> GetJobs(const std::vector<int64_t>& ids) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_BUILD_READER_H_
