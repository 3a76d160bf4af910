// Environment locks (migration 026), by digest. Each call runs under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

Status SqlStore::PutLock(const LockRow& r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto insert,
                        db_->Prepare("INSERT OR IGNORE INTO env_locks(digest, text, packages, "
                                     "bytes, created_ms) VALUES (?,?,?,?,?)"));
  insert->Bind(r.digest).Bind(r.text).Bind(r.packages).Bind(r.bytes).Bind(r.created_ms);
  return RunWrite(*insert).status();
}

Result<std::optional<LockRow>> SqlStore::GetLock(const std::string& digest) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT digest, text, packages, bytes, created_ms "
                                             "FROM env_locks WHERE digest = ?"));
  s->Bind(digest);
  return ReadOptionalRow(*s, [](const Stmt& row) {
    return LockRow{.digest = row.Text(0),
                   .text = row.Text(1),
                   .packages = row.Int(2),
                   .bytes = row.Int(3),
                   .created_ms = row.Int(4)};
  });
}

}  // namespace farm::store
