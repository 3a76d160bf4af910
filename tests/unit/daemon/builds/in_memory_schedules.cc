#include "tests/unit/daemon/builds/in_memory_schedules.h"

namespace farm::builds::testing {

store::ScheduleRow* InMemorySchedules::Live(int64_t id) {
  auto it = rows.find(id);
  return it == rows.end() || it->second.deleted_ms > 0 ? nullptr : &it->second;
}

Status InMemorySchedules::InsertSchedule(store::ScheduleRow* schedule) {
  schedule->id = rows.empty() ? 1 : rows.rbegin()->first + 1;
  rows[schedule->id] = *schedule;
  return Status::Ok();
}

Result<store::ScheduleRow> InMemorySchedules::GetSchedule(int64_t id) {
  if (store::ScheduleRow* row = Live(id)) return *row;
  return Status::NotFound("schedule " + std::to_string(id));
}

Result<std::vector<store::ScheduleRow>> InMemorySchedules::ListSchedules() {
  std::vector<store::ScheduleRow> out;
  for (const auto& [id, row] : rows) {
    if (row.deleted_ms == 0) out.push_back(row);
  }
  return out;
}

Status InMemorySchedules::SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms) {
  store::ScheduleRow* row = Live(id);
  if (row == nullptr) return Status::NotFound("schedule " + std::to_string(id));
  row->paused = paused;
  row->next_fire_ms = next_fire_ms;
  return Status::Ok();
}

Status InMemorySchedules::SetScheduleRequest(int64_t id, const std::string& request,
                                             const std::string& source_sha256) {
  store::ScheduleRow* row = Live(id);
  if (row == nullptr) return Status::NotFound("schedule " + std::to_string(id));
  row->request = request;
  row->source_sha256 = source_sha256;
  return Status::Ok();
}

Status InMemorySchedules::DeleteSchedule(int64_t id, int64_t now_ms) {
  store::ScheduleRow* row = Live(id);
  if (row == nullptr) return Status::NotFound("schedule " + std::to_string(id));
  row->deleted_ms = now_ms;
  return Status::Ok();
}

}  // namespace farm::builds::testing
