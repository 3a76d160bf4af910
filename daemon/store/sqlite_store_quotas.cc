// Quotas (migration 019): admins' overrides of a principal's limits, and what a principal
// holds now (daemon/quota/ decides with them). Each call is one visit under the mutex.
#include "daemon/store/sqlite_store_impl.h"

namespace farm::store {

// Defaults for Store implementations that keep no quotas.
Result<std::optional<QuotaOverrideRow>> Store::GetQuotaOverride(const std::string&) {
  return Status::Unimplemented("GetQuotaOverride");
}
Status Store::SetQuotaOverride(const QuotaOverrideRow&) {
  return Status::Unimplemented("SetQuotaOverride");
}
Result<PrincipalUsage> Store::GetPrincipalUsage(const std::string&) {
  return Status::Unimplemented("GetPrincipalUsage");
}

Result<std::optional<QuotaOverrideRow>> SqliteStore::GetQuotaOverride(
    const std::string& principal) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT principal, submissions, queued_jobs, stored_bytes, "
                           "updated_by, updated_ms FROM quota_overrides WHERE principal = ?"));
  s->Bind(principal);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return std::optional<QuotaOverrideRow>();
  return std::optional<QuotaOverrideRow>(
      QuotaOverrideRow{s->Text(0), s->Int(1), s->Int(2), s->Int(3), s->Text(4), s->Int(5)});
}

Status SqliteStore::SetQuotaOverride(const QuotaOverrideRow& r) {
  Locked lock(this);
  if (r.submissions == kQuotaRoleDefault && r.queued_jobs == kQuotaRoleDefault &&
      r.stored_bytes == kQuotaRoleDefault) {
    FARM_ASSIGN_OR_RETURN(auto del,
                          db_->Prepare("DELETE FROM quota_overrides WHERE principal = ?"));
    del->Bind(r.principal);
    return del->Run();
  }
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("INSERT OR REPLACE INTO quota_overrides(principal, submissions, "
                           "queued_jobs, stored_bytes, updated_by, updated_ms) "
                           "VALUES (?,?,?,?,?,?)"));
  s->Bind(r.principal).Bind(r.submissions).Bind(r.queued_jobs).Bind(r.stored_bytes);
  s->Bind(r.updated_by).Bind(r.updated_ms);
  return s->Run();
}

Result<PrincipalUsage> SqliteStore::GetPrincipalUsage(const std::string& principal) {
  Locked lock(this);
  PrincipalUsage usage;
  FARM_ASSIGN_OR_RETURN(
      auto queued, db_->Prepare("SELECT COUNT(*) FROM jobs j JOIN builds b ON b.id = j.build_id "
                                "WHERE j.state IN (1, 2) AND b.submitted_by = ?"));
  queued->Bind(principal);
  FARM_ASSIGN_OR_RETURN(bool row, queued->Step());
  if (row) usage.queued_jobs = queued->Int(0);
  // A reused or merged job's artifacts are copies of another job's rows: the same blobs.
  FARM_ASSIGN_OR_RETURN(
      auto bytes,
      db_->Prepare(
          "SELECT (SELECT COALESCE(SUM(LENGTH(recipe)), 0) FROM builds WHERE submitted_by = ?1)"
          " + (SELECT COALESCE(SUM(a.log_bytes), 0) FROM attempts a"
          "    JOIN jobs j ON j.id = a.job_id JOIN builds b ON b.id = j.build_id"
          "    WHERE b.submitted_by = ?1)"
          " + (SELECT COALESCE(SUM(f.size), 0) FROM artifacts f"
          "    JOIN jobs j ON j.id = f.job_id JOIN builds b ON b.id = j.build_id"
          "    WHERE b.submitted_by = ?1 AND j.reused_from = 0)"
          " + (SELECT COALESCE(SUM(size), 0) FROM source_archives WHERE uploaded_by = ?1)"));
  bytes->Bind(principal);
  FARM_ASSIGN_OR_RETURN(row, bytes->Step());
  if (row) usage.stored_bytes = bytes->Int(0);
  return usage;
}

}  // namespace farm::store
