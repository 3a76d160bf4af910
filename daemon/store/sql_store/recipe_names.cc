// RecipeNameStore: recipe names and their owners (migration 019). Each call is one
// statement, or one transaction, under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kNameColumns[] = "name, owner, claimed_ms, updated_ms";

RecipeNameRow NameFromRow(const Stmt& s) {
  return RecipeNameRow{s.Text(0), s.Text(1), s.Int(2), s.Int(3)};
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

}  // namespace farm::store
