// Recipe names and their owners, and the audit log (migration 019). Each call is one
// statement, or one transaction, under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kNameColumns[] = "name, owner, claimed_ms, updated_ms";
constexpr char kAuditColumns[] = "id, time_ms, principal, role, action, target, outcome, detail";
constexpr int kMaxAuditRows = 10000;  // one listing at most

RecipeNameRow NameFromRow(const Stmt& s) {
  return RecipeNameRow{s.Text(0), s.Text(1), s.Int(2), s.Int(3)};
}

AuditRow AuditFromRow(const Stmt& s) {
  return AuditRow{s.Int(0),  s.Int(1),  s.Text(2), s.Text(3),
                  s.Text(4), s.Text(5), s.Text(6), s.Text(7)};
}

}  // namespace

Result<RecipeNameRow> SqlStore::ClaimRecipeName(const std::string& name, const std::string& owner,
                                                int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto ins, db_->Prepare("INSERT OR IGNORE INTO recipe_names(name, owner, "
                                               "claimed_ms, updated_ms) VALUES (?, ?, ?, ?)"));
  ins->Bind(name).Bind(owner).Bind(now_ms).Bind(now_ms);
  FARM_RETURN_IF_ERROR(ins->Run());
  bool claimed = db_->Changes() > 0;
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kNameColumns +
                                             " FROM recipe_names WHERE name = ?"));
  s->Bind(name);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return Status::Internal("recipe name " + name + " vanished while claimed");
  RecipeNameRow out = NameFromRow(*s);
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (claimed) Bump();
  return out;
}

Result<std::optional<RecipeNameRow>> SqlStore::GetRecipeName(const std::string& name) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kNameColumns +
                                             " FROM recipe_names WHERE name = ?"));
  s->Bind(name);
  return ReadOptionalRow(*s, NameFromRow);
}

Result<std::vector<RecipeNameRow>> SqlStore::ListRecipeNames() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kNameColumns +
                                             " FROM recipe_names ORDER BY name"));
  return CollectRows(*s, 1'000'000, NameFromRow);
}

Result<RecipeNameRow> SqlStore::TransferRecipeName(const std::string& name,
                                                   const std::string& owner, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("INSERT INTO recipe_names(name, owner, claimed_ms, updated_ms) "
                           "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                           "owner = excluded.owner, updated_ms = excluded.updated_ms"));
  s->Bind(name).Bind(owner).Bind(now_ms).Bind(now_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare(std::string("SELECT ") + kNameColumns +
                                             " FROM recipe_names WHERE name = ?"));
  q->Bind(name);
  FARM_ASSIGN_OR_RETURN(bool row, q->Step());
  if (!row) return Status::Internal("recipe name " + name + " vanished while transferred");
  return NameFromRow(*q);
}

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
