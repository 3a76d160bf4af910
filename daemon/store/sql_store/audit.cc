// AuditStore: the audit log (migration 019). Each call is one statement, or one
// transaction, under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kAuditColumns[] = "id, time_ms, principal, role, action, target, outcome, detail";
constexpr int kMaxAuditRows = 10000;  // one listing at most

AuditRow AuditFromRow(const Stmt& s) {
  return AuditRow{s.Int(0),  s.Int(1),  s.Text(2), s.Text(3),
                  s.Text(4), s.Text(5), s.Text(6), s.Text(7)};
}

}  // namespace

Status SqlStore::InsertAudit(AuditRow* row) {
  Locked lock(this);
  // A transaction of its own (a savepoint inside a batch), so that a failed row leaves
  // the batch's other rows to commit on PostgreSQL too.
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("INSERT INTO audit_log(time_ms, principal, role, action, target, "
                           "outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  s->Bind(row->time_ms)
      .Bind(row->principal)
      .Bind(row->role)
      .Bind(row->action)
      .Bind(row->target)
      .Bind(row->outcome)
      .Bind(row->detail);
  FARM_RETURN_IF_ERROR(s->Run());
  row->id = db_->LastInsertId();
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return Status::Ok();
}

Result<std::vector<AuditRow>> SqlStore::ListAudit(const AuditFilter& filter) {
  int limit = std::clamp(filter.limit, 1, kMaxAuditRows);
  int64_t before = filter.before_id > 0 ? filter.before_id : INT64_MAX;
  std::string sql = std::string("SELECT ") + kAuditColumns + " FROM audit_log WHERE id < ?";
  if (!filter.principal.empty()) sql += " AND principal = ?";
  sql += " ORDER BY id DESC LIMIT ?";
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(sql));
  s->Bind(before);
  if (!filter.principal.empty()) s->Bind(filter.principal);
  s->Bind(static_cast<int64_t>(limit));
  return CollectRows(*s, limit, AuditFromRow);
}

}  // namespace farm::store
