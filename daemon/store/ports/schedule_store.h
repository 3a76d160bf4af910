// ScheduleStore: schedules (cron and upstream watches) and the record of their runs.
// Submitting the build a run fires is BuildControl::CreateBuildLinked.
#ifndef FARM_DAEMON_STORE_PORTS_SCHEDULE_STORE_H_
#define FARM_DAEMON_STORE_PORTS_SCHEDULE_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// A schedule: a build request fired by a cron expression. Values mirror
// farm.v1.MissedRunPolicy and farm.v1.ConcurrencyPolicy.
struct ScheduleRow {
  int64_t id = 0;
  std::string name;
  std::string recipe_name;
  std::string request;  // serialized farm.v1.SubmitBuildRequest, as submitted
  std::string cron;
  std::string time_zone;
  int missed_policy = 1;       // 1 skip, 2 run once
  int concurrency_policy = 1;  // 1 skip while the previous run's build is going, 2 allow
  bool paused = false;
  int64_t next_fire_ms = 0;
  std::string created_by;
  int64_t created_ms = 0;
  int64_t deleted_ms = 0;
  std::string source_sha256;  // the uploaded source archive it fires, "" for git
  // A watch schedule (cron ""): the serialized farm.v1.UpstreamWatch, and what it has seen
  // (daemon/cron/watch_state.h). next_fire_ms is then its next poll.
  std::string watch;
  std::string watch_state;
};

// One firing of a schedule: a build submitted, or the reason nothing was built. Values
// mirror farm.v1.ScheduleTrigger and farm.v1.ScheduleRunOutcome.
struct ScheduleRunRow {
  int64_t id = 0;
  int64_t schedule_id = 0;
  int trigger = 0;
  int outcome = 0;
  int64_t fire_ms = 0;  // the fire time answered (the request time for run-now)
  int64_t created_ms = 0;
  int64_t build_id = 0;  // > 0 when a build was submitted
  int build_state = 0;   // the build's state, filled by queries
  std::string resolved_commit;
  std::string inputs_digest;  // hash of every input; "" when the source content is unknown
  std::string detail;
  int64_t upstream_ms = 0;  // watch runs: when upstream published the change answered
  // Not a column: when non-empty, the schedule's watch_state becomes this in the
  // transaction that stores the run (a watch's change is seen exactly when it fired).
  std::string watch_state;
};

class ScheduleStore {
 public:
  virtual ~ScheduleStore() = default;

  // Inserts the schedule; fills in its id.
  virtual Status InsertSchedule(ScheduleRow* schedule) = 0;
  // NotFound for an unknown or deleted schedule.
  virtual Result<ScheduleRow> GetSchedule(int64_t id) = 0;
  // Schedules not deleted, by id.
  virtual Result<std::vector<ScheduleRow>> ListSchedules() = 0;
  // Pauses or resumes; a resumed schedule fires next at next_fire_ms.
  virtual Status SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms) = 0;
  // Replaces the build request a schedule fires (and the source archive it names);
  // its timing, watch state and runs stay. NotFound for an unknown or deleted schedule.
  virtual Status SetScheduleRequest(int64_t id, const std::string& request,
                                    const std::string& source_sha256) = 0;
  // Marks the schedule deleted; its runs and builds stay. NotFound when unknown.
  virtual Status DeleteSchedule(int64_t id, int64_t now_ms) = 0;
  // Records a run that submitted nothing and sets the next fire time when
  // next_fire_ms >= 0, in one transaction. Fills in run->id.
  virtual Status RecordScheduleRun(ScheduleRunRow* run, int64_t next_fire_ms) = 0;
  // A watch's poll that fired nothing: its state and next poll time.
  virtual Status SetWatchState(int64_t id, const std::string& state, int64_t next_fire_ms) = 0;
  // The schedule's runs, newest first, at most `limit`, with their builds' states.
  virtual Result<std::vector<ScheduleRunRow>> ListScheduleRuns(int64_t schedule_id, int limit) = 0;
  // The newest run whose build succeeded, if any.
  virtual Result<std::optional<ScheduleRunRow>> LastSucceededScheduleRun(int64_t schedule_id) = 0;
  // The build of one of the schedule's runs that is still queued or running, 0 if none.
  virtual Result<int64_t> ActiveScheduleBuild(int64_t schedule_id) = 0;
  // The id of the schedule whose run submitted `build_id`, 0 if none.
  virtual Result<int64_t> ScheduleOfBuild(int64_t build_id) = 0;
  // The schedule runs that submitted `build_ids`, by build id (each build has at most one).
  virtual Result<std::map<int64_t, std::vector<ScheduleRunRow>>> ListScheduleRunsOfBuilds(
      const std::vector<int64_t>& build_ids) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_SCHEDULE_STORE_H_
