// Thin RAII wrapper over the SQLite C API: a connection, prepared statements with typed
// binding, and transactions. Not thread-safe; SqliteStore serializes access.
#ifndef FARM_DAEMON_STORE_SQLITE_DB_H_
#define FARM_DAEMON_STORE_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::store {

class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Binds parameters 1..N in order; returns *this for chaining.
  Stmt& Bind(int64_t v);
  Stmt& Bind(int v) { return Bind(static_cast<int64_t>(v)); }
  Stmt& Bind(const std::string& v);
  Stmt& BindBlob(const std::string& v);

  // Returns true when a row is available, false when done; errors as Status.
  Result<bool> Step();
  // Runs to completion (for statements without rows).
  Status Run();

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int next_ = 1;
};

class Db {
 public:
  ~Db();
  // Opens with WAL, foreign keys on and synchronous=FULL.
  static Result<std::unique_ptr<Db>> Open(const std::string& path);

  Status Exec(const std::string& sql);
  Result<std::unique_ptr<Stmt>> Prepare(std::string_view sql);
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }

  // Applies the compiled-in migrations this database has not recorded, by number and each
  // in one transaction (migration_runner.h). On error the database is left at the last
  // migration that succeeded and the error says what to fix.
  Status Migrate();

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// Commits on Commit(); rolls back when destroyed without it.
class Transaction {
 public:
  explicit Transaction(Db* db);
  ~Transaction();
  Status status() const { return status_; }
  Status Commit();

 private:
  Db* db_;
  Status status_;
  bool done_ = false;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQLITE_DB_H_
