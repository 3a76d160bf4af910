// RecipeNameStore and ProjectNameStore: recipe names (migration 019) and project names
// (027) and their owners. Each call is one statement, or one transaction, under the
// store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kNameColumns[] = "name, owner, claimed_ms, updated_ms";
constexpr char kRecipeNames[] = "recipe_names";
constexpr char kProjectNames[] = "project_names";

RecipeNameRow NameFromRow(const Stmt& s) {
  return RecipeNameRow{s.Text(0), s.Text(1), s.Int(2), s.Int(3)};
}

}  // namespace

// `table` is one of the two constants above, never input.
Result<RecipeNameRow> SqlStore::ClaimOwnedName(const char* table, const std::string& name,
                                               const std::string& owner, int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto ins, db_->Prepare(std::string("INSERT OR IGNORE INTO ") + table +
                                               "(name, owner, claimed_ms, updated_ms) "
                                               "VALUES (?, ?, ?, ?)"));
  ins->Bind(name).Bind(owner).Bind(now_ms).Bind(now_ms);
  FARM_RETURN_IF_ERROR(ins->Run());
  bool claimed = db_->Changes() > 0;
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kNameColumns + " FROM " +
                                             table + " WHERE name = ?"));
  s->Bind(name);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return Status::Internal(std::string(table) + " " + name + " vanished while claimed");
  RecipeNameRow out = NameFromRow(*s);
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (claimed) Bump();
  return out;
}

Result<std::optional<RecipeNameRow>> SqlStore::GetOwnedName(const char* table,
                                                            const std::string& name) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kNameColumns + " FROM " +
                                             table + " WHERE name = ?"));
  s->Bind(name);
  return ReadOptionalRow(*s, NameFromRow);
}

Result<std::vector<RecipeNameRow>> SqlStore::ListOwnedNames(const char* table) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kNameColumns + " FROM " +
                                             table + " ORDER BY name"));
  return CollectRows(*s, 1'000'000, NameFromRow);
}

Result<RecipeNameRow> SqlStore::TransferOwnedName(const char* table, const std::string& name,
                                                  const std::string& owner, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare(std::string("INSERT INTO ") + table +
                                     "(name, owner, claimed_ms, updated_ms) "
                                     "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                                     "owner = excluded.owner, updated_ms = excluded.updated_ms"));
  s->Bind(name).Bind(owner).Bind(now_ms).Bind(now_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare(std::string("SELECT ") + kNameColumns + " FROM " +
                                             table + " WHERE name = ?"));
  q->Bind(name);
  FARM_ASSIGN_OR_RETURN(bool row, q->Step());
  if (!row)
    return Status::Internal(std::string(table) + " " + name + " vanished while transferred");
  return NameFromRow(*q);
}

Result<RecipeNameRow> SqlStore::ClaimRecipeName(const std::string& name, const std::string& owner,
                                                int64_t now_ms) {
  return ClaimOwnedName(kRecipeNames, name, owner, now_ms);
}

Result<std::optional<RecipeNameRow>> SqlStore::GetRecipeName(const std::string& name) {
  return GetOwnedName(kRecipeNames, name);
}

Result<std::vector<RecipeNameRow>> SqlStore::ListRecipeNames() {
  return ListOwnedNames(kRecipeNames);
}

Result<RecipeNameRow> SqlStore::TransferRecipeName(const std::string& name,
                                                   const std::string& owner, int64_t now_ms) {
  return TransferOwnedName(kRecipeNames, name, owner, now_ms);
}

Result<ProjectNameRow> SqlStore::ClaimProjectName(const std::string& name, const std::string& owner,
                                                  int64_t now_ms) {
  return ClaimOwnedName(kProjectNames, name, owner, now_ms);
}

Result<std::optional<ProjectNameRow>> SqlStore::GetProjectName(const std::string& name) {
  return GetOwnedName(kProjectNames, name);
}

Result<std::vector<ProjectNameRow>> SqlStore::ListProjectNames() {
  return ListOwnedNames(kProjectNames);
}

Result<ProjectNameRow> SqlStore::TransferProjectName(const std::string& name,
                                                     const std::string& owner, int64_t now_ms) {
  return TransferOwnedName(kProjectNames, name, owner, now_ms);
}

}  // namespace farm::store
