#include "daemon/store/sql_store/postgres.h"

#include "daemon/store/sql/pg_db.h"
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url) {
  FARM_ASSIGN_OR_RETURN(auto db, OpenPgDb(url));
  FARM_RETURN_IF_ERROR(db->Migrate());
  return std::unique_ptr<Store>(new SqlStore(std::move(db)));
}

struct ActiveFarmdLock::Conn {
  std::unique_ptr<Db> db;
};

Result<std::unique_ptr<ActiveFarmdLock>> ActiveFarmdLock::Acquire(
    const std::string& url, const std::function<void()>& on_standby) {
  // The lock lives in this session: a new session would hold nothing.
  FARM_ASSIGN_OR_RETURN(auto db, OpenPgDb(url, /*reconnect=*/false));
  FARM_RETURN_IF_ERROR(WaitForActiveLock(*db, on_standby));
  std::unique_ptr<ActiveFarmdLock> lock(new ActiveFarmdLock());
  lock->conn_ = std::make_unique<Conn>(Conn{std::move(db)});
  return lock;
}

ActiveFarmdLock::~ActiveFarmdLock() = default;

Status ActiveFarmdLock::Check() {
  FARM_ASSIGN_OR_RETURN(auto q, conn_->db->Prepare("SELECT 1"));
  return q->Run();
}

bool IsPostgresUrl(const std::string& store) {
  return store.rfind("postgres://", 0) == 0 || store.rfind("postgresql://", 0) == 0;
}

}  // namespace farm::store
