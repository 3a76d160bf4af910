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
  JobRow j;
  j.id = s.Int(0);
  j.build_id = s.Int(1);
  j.cell = s.Text(2);
  j.state = static_cast<JobState>(s.Int(3));
  j.priority = static_cast<int>(s.Int(4));
  j.attempt = static_cast<int>(s.Int(5));
  j.worker_id = s.Text(6);
  j.lease_expiry_ms = s.Int(7);
  j.cancel_requested = s.Int(8) != 0;
  j.not_before_ms = s.Int(9);
  j.error = s.Text(10);
  j.build_key = s.Text(11);
  j.created_ms = s.Int(12);
  j.started_ms = s.Int(13);
  j.finished_ms = s.Int(14);
  j.reused_from = s.Int(15);
  j.max_attempts = static_cast<int>(s.Int(16));
  j.cancelled_by = s.Text(17);
  j.kind = static_cast<int>(s.Int(18));
  j.target_job_id = s.Int(19);
  j.target_attempt = static_cast<int>(s.Int(20));
  j.needs = s.Text(21);
  j.compile_mib = s.Int(22);
  j.validation_mib = s.Int(23);
  j.held = static_cast<int>(s.Int(24));
  j.key_base = s.Text(25);
  j.release_candidate = s.Int(26) != 0;
  return j;
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(auto db, Db::Open(path));
  FARM_RETURN_IF_ERROR(db->Migrate());
  return std::unique_ptr<Store>(new SqlStore(std::move(db)));
}

}  // namespace farm::store
