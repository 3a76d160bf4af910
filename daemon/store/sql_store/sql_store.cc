// What every area of SqlStore shares: opening a SQLite store and the job rows' columns.
// Each port's calls are in a file of their own (sql_store.h lists them).
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

const char kJobColumns[] =
    "id, build_id, cell, state, priority, attempt, worker_id, lease_expiry_ms, "
    "cancel_requested, not_before_ms, error, build_key, created_ms, started_ms, finished_ms, "
    "reused_from, max_attempts, cancelled_by, kind, target_job_id, target_attempt, needs, "
    "compile_mib, validation_mib, held, key_base, release_candidate";

JobRow JobFromRow(const Stmt& s) {
  return ReadMembers<JobRow>(
      s, &JobRow::id, &JobRow::build_id, &JobRow::cell, &JobRow::state, &JobRow::priority,
      &JobRow::attempt, &JobRow::worker_id, &JobRow::lease_expiry_ms, &JobRow::cancel_requested,
      &JobRow::not_before_ms, &JobRow::error, &JobRow::build_key, &JobRow::created_ms,
      &JobRow::started_ms, &JobRow::finished_ms, &JobRow::reused_from, &JobRow::max_attempts,
      &JobRow::cancelled_by, &JobRow::kind, &JobRow::target_job_id, &JobRow::target_attempt,
      &JobRow::needs, &JobRow::compile_mib, &JobRow::validation_mib, &JobRow::held,
      &JobRow::key_base, &JobRow::release_candidate);
}

Result<bool> SqlStore::RunWrite(Stmt& s) {
  FARM_RETURN_IF_ERROR(s.Run());
  const bool changed = db_->Changes() > 0;
  if (changed) Bump();
  return changed;
}

Status SqlStore::RunWriteOfOne(Stmt& s, const std::string& not_found) {
  FARM_RETURN_IF_ERROR(s.Run());
  if (db_->Changes() == 0) return Status::NotFound(not_found);
  Bump();
  return Status::Ok();
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(auto db, Db::Open(path));
  FARM_RETURN_IF_ERROR(db->Migrate());
  return std::unique_ptr<Store>(new SqlStore(std::move(db)));
}

}  // namespace farm::store
