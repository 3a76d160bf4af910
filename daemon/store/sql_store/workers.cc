// WorkerStore: registered workers, their state and drain requests, and the jobs each runs.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kWorkerColumns[] =
    "id, name, capabilities, state, registered_ms, last_heartbeat_ms, drain_requested";

WorkerRow WorkerFromRow(const Stmt& s) {
  // A name this farmd does not know (written by a newer one) reads as lost: never placed.
  WorkerState state = ParseWorkerState(s.Text(3)).value_or(WorkerState::kLost);
  return WorkerRow{s.Text(0), s.Text(1), s.Text(2), state, s.Int(4), s.Int(5), s.Int(6) != 0};
}

}  // namespace

Status SqlStore::UpsertWorker(const WorkerRow& w) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO workers(id, name, capabilities, state, registered_ms, last_heartbeat_ms) "
          "VALUES (?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET name=excluded.name, "
          "capabilities=excluded.capabilities, state=excluded.state, "
          "last_heartbeat_ms=excluded.last_heartbeat_ms"));
  s->Bind(w.id)
      .Bind(w.name)
      .BindBlob(w.capabilities)
      .Bind(std::string(WorkerStateName(w.state)))
      .Bind(w.registered_ms)
      .Bind(w.last_heartbeat_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  BumpQueue();
  return Status::Ok();
}

Result<WorkerRow> SqlStore::GetWorker(const std::string& id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kWorkerColumns + " FROM workers WHERE id = ?"));
  s->Bind(id);
  return ReadOneRow(*s, WorkerFromRow, "no worker " + id);
}

Result<std::vector<WorkerRow>> SqlStore::ListWorkers() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kWorkerColumns +
                                             " FROM workers ORDER BY name, id"));
  return CollectRows(*s, 100000, WorkerFromRow);
}

Status SqlStore::TouchWorker(const std::string& id, int64_t now_ms, WorkerState state) {
  Locked lock(this);
  // Only a change into or out of a state placement skips (idle to lost, say) changes
  // placement; a heartbeat or a flip between idle and busy does not.
  bool state_changes = false, placement_changes = false;
  {
    FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare("SELECT state FROM workers WHERE id = ?"));
    q->Bind(id);
    FARM_ASSIGN_OR_RETURN(bool found, q->Step());
    std::optional<WorkerState> was = found ? ParseWorkerState(q->Text(0)) : std::nullopt;
    state_changes = found && was != state;
    placement_changes = state_changes && (!was || IsAway(*was) || IsAway(state));
  }
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE workers SET last_heartbeat_ms = ?, state = ? WHERE id = ?"));
  s->Bind(now_ms).Bind(std::string(WorkerStateName(state))).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no worker " + id);
  if (placement_changes) {
    BumpQueue();
  } else if (state_changes) {
    Bump();
  }
  return Status::Ok();
}

Status SqlStore::SetDrainRequested(const std::string& id, bool drain) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("UPDATE workers SET drain_requested = ? WHERE id = ?"));
  s->Bind(drain ? 1 : 0).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no worker " + id);
  BumpQueue();
  return Status::Ok();
}

Result<int> SqlStore::CountRunningJobs(const std::string& worker_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT COUNT(*) FROM jobs WHERE worker_id = ? AND state = 2"));
  s->Bind(worker_id);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? static_cast<int>(s->Int(0)) : 0;
}

Result<std::vector<JobRow>> SqlStore::ListRunningJobs(const std::string& worker_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kJobColumns +
                                             " FROM jobs WHERE worker_id = ? AND state = 2 "
                                             "ORDER BY id LIMIT 1000"));
  s->Bind(worker_id);
  return CollectRows(*s, 1000, JobFromRow);
}

}  // namespace farm::store
