// Quotas (migration 021): admins' overrides of a principal's limits, and what a principal
// holds now (daemon/quota/ decides with them). Each call is one statement under the mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

Result<std::optional<QuotaOverrideRow>> SqlStore::GetQuotaOverride(const std::string& principal) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT principal, submissions, queued_jobs, stored_bytes, "
                           "updated_by, updated_ms FROM quota_overrides WHERE principal = ?"));
  s->Bind(principal);
  return ReadOptionalRow(*s, [](const Stmt& r) {
    return QuotaOverrideRow{r.Text(0), r.Int(1), r.Int(2), r.Int(3), r.Text(4), r.Int(5)};
  });
}

Status SqlStore::SetQuotaOverride(const QuotaOverrideRow& r) {
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

Result<PrincipalUsage> SqlStore::GetPrincipalUsage(const std::string& principal) {
  Locked lock(this);
  // Kept by triggers as builds, jobs, logs, wheels and sources change (migration 021).
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT queued_jobs, stored_bytes FROM "
                                             "principal_usage WHERE principal = ?"));
  s->Bind(principal);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return PrincipalUsage{};
  return PrincipalUsage{.queued_jobs = s->Int(0), .stored_bytes = s->Int(1)};
}

}  // namespace farm::store
