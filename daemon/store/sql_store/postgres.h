// The store on PostgreSQL: the same Store implementation and queries as the SQLite file
// (sql_store/sql_store.h), over the libpq backend of Db (pg_db.h) and the PostgreSQL forms of
// the migrations (migrations/postgres/). Chosen by farmd --store postgres://...
#ifndef FARM_DAEMON_STORE_SQL_STORE_POSTGRES_H_
#define FARM_DAEMON_STORE_SQL_STORE_POSTGRES_H_

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/store/store.h"

namespace farm::store {

// Connects to `url` and applies the migrations the database lacks.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url);

// The mark of the one active farmd of a database: PostgreSQL's session advisory lock
// (pg_db.h WaitForActiveLock) held on a connection of its own for the object's lifetime.
// When the process dies, its session ends and the lock is free for a standby.
class ActiveFarmdLock {
 public:
  // Takes the lock; when another farmd holds it, calls `on_standby` once and waits,
  // without a time limit, until that farmd's session ends.
  static Result<std::unique_ptr<ActiveFarmdLock>> Acquire(const std::string& url,
                                                          const std::function<void()>& on_standby);
  ~ActiveFarmdLock();

  // Ok while the lock's session lives; Unavailable once its connection is gone (the
  // server restarted, the network dropped, an administrator ended it), after which a
  // standby may already be active and this farmd must stop.
  Status Check();

 private:
  ActiveFarmdLock() = default;
  struct Conn;
  std::unique_ptr<Conn> conn_;
};

// True for a --store value naming a PostgreSQL database (postgres:// or postgresql://).
bool IsPostgresUrl(const std::string& store);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_STORE_POSTGRES_H_
