// JobStats: read-only figures over all jobs for the dashboard, /metrics and the package
// index: counts per state, histograms, timings, and the artifacts of succeeded jobs.
#ifndef FARM_DAEMON_STORE_PORTS_JOB_STATS_H_
#define FARM_DAEMON_STORE_PORTS_JOB_STATS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

// A finished job's timing with its build's recipe, for charts. started_ms is when the
// attempt that counted started: earlier attempts and the queue between them are no build
// time.
struct JobTimingRow {
  int64_t job_id = 0;
  int64_t build_id = 0;
  std::string recipe_name;
  int state = 0;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  std::string cell;  // serialized farm.v1.MatrixCell
};

// Which span of a job a histogram measures.
enum class JobSpan { kQueueWait, kRunTime };

// The histogram bounds (ms) the store keeps counters for as jobs change (migration
// 017_job_counters.sql holds the same values): /metrics' queue-wait and build-duration
// buckets.
inline const std::vector<int64_t> kQueueWaitBoundsMs = {
    1'000, 5'000, 15'000, 30'000, 60'000, 300'000, 900'000, 3'600'000, 14'400'000};
inline const std::vector<int64_t> kRunTimeBoundsMs = {30'000,    60'000,    120'000,   300'000,
                                                      600'000,   1'200'000, 1'800'000, 3'600'000,
                                                      7'200'000, 14'400'000};

// Cumulative counts of jobs whose span (ms) is <= each bound, plus the total and sum.
struct SpanHistogram {
  std::vector<int64_t> bounds_ms;
  std::vector<int64_t> cumulative;  // same length as bounds_ms
  int64_t count = 0;
  double sum_ms = 0;
};

// An artifact of a succeeded job with the job's serialized farm.v1.MatrixCell (index).
struct IndexArtifactRow {
  ArtifactRow artifact;
  std::string cell;
  bool release_candidate = false;  // its job's (JobRow::release_candidate)
};

class JobStats {
 public:
  virtual ~JobStats() = default;

  // Jobs per state: element i counts jobs with state i (0..5, the farm.v1.JobState values).
  // Read from counters the store keeps as jobs change, not by counting the jobs.
  virtual Result<std::vector<int64_t>> CountJobsByState() = 0;
  // Jobs in `state`, newest id first, ids < before_id (0: from the newest), at most `limit`.
  virtual Result<std::vector<JobRow>> ListJobsInState(int state, int64_t before_id, int limit) = 0;
  // Queue wait (started - created, jobs that started and were not reused) or run time
  // (finished - started, terminal jobs that started) over all jobs. With the kept bounds
  // (kQueueWaitBoundsMs, kRunTimeBoundsMs) it reads counters the store keeps as jobs
  // change, a few rows whatever the number of jobs; other bounds count every job.
  virtual Result<SpanHistogram> JobSpanHistogram(JobSpan span,
                                                 const std::vector<int64_t>& bounds_ms) = 0;
  // Terminal build jobs that ran (validation jobs are no build time), newest finish first,
  // at most `limit`.
  virtual Result<std::vector<JobTimingRow>> ListJobTimings(int limit) = 0;
  // Artifacts of succeeded jobs (reused jobs' copies included), by artifact id.
  virtual Result<std::vector<IndexArtifactRow>> ListIndexArtifacts(int limit) = 0;
  // The run time (start to end of its counted attempt) of the newest build job before
  // `before_job_id` that succeeded by building (not reused) the same serialized cell for a
  // build of `recipe_name`; nullopt when there is none. Validation jobs never count.
  virtual Result<std::optional<int64_t>> LastSuccessfulRunMs(const std::string& recipe_name,
                                                             const std::string& cell,
                                                             int64_t before_job_id) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_JOB_STATS_H_
