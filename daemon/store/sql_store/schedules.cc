// ScheduleStore: schedules and their runs.
#include <algorithm>
#include <limits>

#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

namespace {

constexpr char kScheduleColumns[] =
    "id, name, recipe_name, request, cron, time_zone, missed_policy, concurrency_policy, "
    "paused, next_fire_ms, created_by, created_ms, deleted_ms, source_sha256, watch, watch_state";

ScheduleRow ScheduleFromRow(const Stmt& s) {
  return ReadMembers<ScheduleRow>(
      s, &ScheduleRow::id, &ScheduleRow::name, &ScheduleRow::recipe_name, &ScheduleRow::request,
      &ScheduleRow::cron, &ScheduleRow::time_zone, &ScheduleRow::missed_policy,
      &ScheduleRow::concurrency_policy, &ScheduleRow::paused, &ScheduleRow::next_fire_ms,
      &ScheduleRow::created_by, &ScheduleRow::created_ms, &ScheduleRow::deleted_ms,
      &ScheduleRow::source_sha256, &ScheduleRow::watch, &ScheduleRow::watch_state);
}

constexpr char kRunColumns[] =
    "r.id, r.schedule_id, r.trigger, r.outcome, r.fire_ms, r.created_ms, r.build_id, "
    "COALESCE(b.state, 0), r.resolved_commit, r.inputs_digest, r.detail, r.upstream_ms";
constexpr char kRunFrom[] = " FROM schedule_runs r LEFT JOIN builds b ON b.id = r.build_id ";

ScheduleRunRow RunFromRow(const Stmt& s) {
  return ReadMembers<ScheduleRunRow>(
      s, &ScheduleRunRow::id, &ScheduleRunRow::schedule_id, &ScheduleRunRow::trigger,
      &ScheduleRunRow::outcome, &ScheduleRunRow::fire_ms, &ScheduleRunRow::created_ms,
      &ScheduleRunRow::build_id, &ScheduleRunRow::build_state, &ScheduleRunRow::resolved_commit,
      &ScheduleRunRow::inputs_digest, &ScheduleRunRow::detail, &ScheduleRunRow::upstream_ms);
}

}  // namespace

// --- schedules ------------------------------------------------------------------------------

Status SqlStore::InsertSchedule(ScheduleRow* r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO schedules(name, recipe_name, request, cron, time_zone, missed_policy, "
          "concurrency_policy, paused, next_fire_ms, created_by, created_ms, source_sha256, "
          "watch, watch_state) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  s->Bind(r->name)
      .Bind(r->recipe_name)
      .BindBlob(r->request)
      .Bind(r->cron)
      .Bind(r->time_zone)
      .Bind(r->missed_policy)
      .Bind(r->concurrency_policy)
      .Bind(r->paused ? 1 : 0)
      .Bind(r->next_fire_ms)
      .Bind(r->created_by)
      .Bind(r->created_ms)
      .Bind(r->source_sha256)
      .BindBlob(r->watch)
      .Bind(r->watch_state);
  FARM_RETURN_IF_ERROR(s->Run());
  r->id = db_->LastInsertId();
  Bump();
  return Status::Ok();
}

Result<ScheduleRow> SqlStore::GetSchedule(int64_t id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kScheduleColumns +
                                             " FROM schedules WHERE id = ? AND deleted_ms = 0"));
  s->Bind(id);
  return ReadOneRow(*s, ScheduleFromRow, "no schedule " + std::to_string(id));
}

Result<std::vector<ScheduleRow>> SqlStore::ListSchedules() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kScheduleColumns +
                                             " FROM schedules WHERE deleted_ms = 0 ORDER BY id"));
  return CollectRows(*s, 100000, ScheduleFromRow);
}

Status SqlStore::SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE schedules SET paused = ?, next_fire_ms = ? WHERE id = ? AND deleted_ms = 0"));
  s->Bind(paused ? 1 : 0).Bind(next_fire_ms).Bind(id);
  return RunWriteOfOne(*s, "no schedule " + std::to_string(id));
}

Status SqlStore::SetScheduleRequest(int64_t id, const std::string& request,
                                    const std::string& source_sha256) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("UPDATE schedules SET request = ?, source_sha256 = ? "
                                             "WHERE id = ? AND deleted_ms = 0"));
  s->BindBlob(request).Bind(source_sha256).Bind(id);
  return RunWriteOfOne(*s, "no schedule " + std::to_string(id));
}

Status SqlStore::DeleteSchedule(int64_t id, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE schedules SET deleted_ms = ? WHERE id = ? AND deleted_ms = 0"));
  s->Bind(now_ms > 0 ? now_ms : 1).Bind(id);
  return RunWriteOfOne(*s, "no schedule " + std::to_string(id));
}

Status SqlStore::InsertScheduleRunLocked(ScheduleRunRow* run, int64_t next_fire_ms) {
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO schedule_runs(schedule_id, trigger, outcome, fire_ms, created_ms, build_id, "
          "resolved_commit, inputs_digest, detail, upstream_ms) VALUES (?,?,?,?,?,?,?,?,?,?)"));
  s->Bind(run->schedule_id)
      .Bind(run->trigger)
      .Bind(run->outcome)
      .Bind(run->fire_ms)
      .Bind(run->created_ms)
      .Bind(run->build_id)
      .Bind(run->resolved_commit)
      .Bind(run->inputs_digest)
      .Bind(run->detail)
      .Bind(run->upstream_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  run->id = db_->LastInsertId();
  if (!run->watch_state.empty()) {
    FARM_ASSIGN_OR_RETURN(auto w,
                          db_->Prepare("UPDATE schedules SET watch_state = ? WHERE id = ?"));
    w->Bind(run->watch_state).Bind(run->schedule_id);
    FARM_RETURN_IF_ERROR(w->Run());
  }
  if (next_fire_ms < 0) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto up,
                        db_->Prepare("UPDATE schedules SET next_fire_ms = ? WHERE id = ?"));
  up->Bind(next_fire_ms).Bind(run->schedule_id);
  return up->Run();
}

Status SqlStore::RecordScheduleRun(ScheduleRunRow* run, int64_t next_fire_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_RETURN_IF_ERROR(InsertScheduleRunLocked(run, next_fire_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return Status::Ok();
}

Status SqlStore::SetWatchState(int64_t id, const std::string& state, int64_t next_fire_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE schedules SET watch_state = ?, next_fire_ms = ? WHERE id = ? "
                           "AND deleted_ms = 0"));
  s->Bind(state).Bind(next_fire_ms).Bind(id);
  return RunWriteOfOne(*s, "no schedule " + std::to_string(id));
}

Result<std::vector<ScheduleRunRow>> SqlStore::ListScheduleRuns(int64_t schedule_id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kRunColumns + kRunFrom +
                                             "WHERE r.schedule_id = ? ORDER BY r.id DESC LIMIT ?"));
  s->Bind(schedule_id).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, RunFromRow);
}

Result<std::optional<ScheduleRunRow>> SqlStore::LastSucceededScheduleRun(int64_t schedule_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kRunColumns + kRunFrom +
                           "WHERE r.schedule_id = ? AND b.state = 3 ORDER BY r.id DESC LIMIT 1"));
  s->Bind(schedule_id);
  return ReadOptionalRow(*s, RunFromRow);
}

Result<int64_t> SqlStore::ActiveScheduleBuild(int64_t schedule_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("SELECT r.build_id FROM schedule_runs r JOIN builds b ON b.id = r.build_id "
                   "WHERE r.schedule_id = ? AND b.state IN (1, 2) ORDER BY r.id DESC LIMIT 1"));
  s->Bind(schedule_id);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Result<int64_t> SqlStore::ScheduleOfBuild(int64_t build_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "SELECT schedule_id FROM schedule_runs WHERE build_id = ? AND build_id > 0 LIMIT 1"));
  s->Bind(build_id);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Result<std::map<int64_t, std::vector<ScheduleRunRow>>> SqlStore::ListScheduleRunsOfBuilds(
    const std::vector<int64_t>& build_ids) {
  Locked lock(this);
  return SelectByIds<ScheduleRunRow>(
      *db_, std::string("SELECT ") + kRunColumns + kRunFrom + "WHERE r.build_id IN",
      "r.build_id, r.id", build_ids, RunFromRow, &ScheduleRunRow::build_id);
}

// --- builds with links ----------------------------------------------------------------------

}  // namespace farm::store
