// An in-memory store::ScheduleStore for the schedule use cases' unit tests (no SQLite):
// schedules in a map, a deleted one marked as the SQL store marks it. The runs' methods,
// which only the schedule runner calls, answer Unimplemented. Not thread-safe.
#ifndef FARM_TESTS_UNIT_DAEMON_BUILDS_IN_MEMORY_SCHEDULES_H_
#define FARM_TESTS_UNIT_DAEMON_BUILDS_IN_MEMORY_SCHEDULES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/ports/schedule_store.h"

namespace farm::builds::testing {

class InMemorySchedules final : public store::ScheduleStore {
 public:
  std::map<int64_t, store::ScheduleRow> rows;  // deleted ones included

  Status InsertSchedule(store::ScheduleRow* schedule) override;
  Result<store::ScheduleRow> GetSchedule(int64_t id) override;
  Result<std::vector<store::ScheduleRow>> ListSchedules() override;
  Status SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms) override;
  Status SetScheduleRequest(int64_t id, const std::string& request,
                            const std::string& source_sha256) override;
  Status DeleteSchedule(int64_t id, int64_t now_ms) override;

  Status RecordScheduleRun(store::ScheduleRunRow*, int64_t) override { return Unused(); }
  Status SetWatchState(int64_t, const std::string&, int64_t) override { return Unused(); }
  Result<std::vector<store::ScheduleRunRow>> ListScheduleRuns(int64_t, int) override {
    return Unused();
  }
  Result<std::optional<store::ScheduleRunRow>> LastSucceededScheduleRun(int64_t) override {
    return Unused();
  }
  Result<int64_t> ActiveScheduleBuild(int64_t) override { return Unused(); }
  Result<int64_t> ScheduleOfBuild(int64_t) override { return Unused(); }
  Result<std::map<int64_t, std::vector<store::ScheduleRunRow>>> ListScheduleRunsOfBuilds(
      const std::vector<int64_t>&) override {
    return Unused();
  }

 private:
  static Status Unused() { return Status::Unimplemented("not kept by InMemorySchedules"); }
  // The live schedule `id`, or null.
  store::ScheduleRow* Live(int64_t id);
};

}  // namespace farm::builds::testing

#endif  // FARM_TESTS_UNIT_DAEMON_BUILDS_IN_MEMORY_SCHEDULES_H_
