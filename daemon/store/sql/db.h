// The SQL connection the store's queries run on: prepared statements with typed binding,
// and transactions. Two backends implement it: SQLite (Db::Open, this file's .cc) and
// PostgreSQL through libpq (pg_db.h). Queries are written once, in SQLite's dialect; the
// PostgreSQL backend translates the few constructs that differ (pg_db.h says which).
// Not thread-safe (but for WaitDurable); SqlStore serializes access.
#ifndef FARM_DAEMON_STORE_SQL_DB_H_
#define FARM_DAEMON_STORE_SQL_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::store {

enum class Dialect { kSqlite, kPostgres };

class Stmt {
 public:
  virtual ~Stmt() = default;

  // Binds parameters 1..N in order; returns *this for chaining. Text is bound as text,
  // a blob as bytes (it may hold any byte, NUL included).
  Stmt& Bind(int64_t v) {
    BindInt(v);
    return *this;
  }
  Stmt& Bind(int v) { return Bind(static_cast<int64_t>(v)); }
  Stmt& Bind(const std::string& v) {
    BindText(v);
    return *this;
  }
  Stmt& BindBlob(const std::string& v) {
    BindBytes(v);
    return *this;
  }

  // Returns true when a row is available, false when done; errors as Status.
  virtual Result<bool> Step() = 0;
  // Runs to completion (for statements without rows).
  Status Run();

  // Column `col` of the current row; NULL reads as 0 or "".
  virtual int64_t Int(int col) const = 0;
  virtual std::string Text(int col) const = 0;

 protected:
  virtual void BindInt(int64_t v) = 0;
  virtual void BindText(const std::string& v) = 0;
  virtual void BindBytes(const std::string& v) = 0;
};

class Db {
 public:
  virtual ~Db() = default;
  // Opens a SQLite file with WAL and foreign keys on. Commits are flushed by WaitDurable.
  static Result<std::unique_ptr<Db>> Open(const std::string& path);

  virtual Dialect dialect() const = 0;
  // Runs one or more statements without parameters.
  virtual Status Exec(const std::string& sql) = 0;
  virtual Result<std::unique_ptr<Stmt>> Prepare(std::string_view sql) = 0;
  // The id the last INSERT into a table with a generated id gave its row.
  virtual int64_t LastInsertId() const = 0;
  // Rows the last INSERT, UPDATE or DELETE changed.
  virtual int Changes() const = 0;

  // Applies the compiled-in migrations this database has not recorded, by number and each
  // in one transaction (migration_runner.h). On error the database is left at the last
  // migration that succeeded and the error says what to fix.
  virtual Status Migrate() = 0;

  // Durability of commits. The SQLite backend returns from COMMIT once the transaction is
  // in its write-ahead log but before the log is flushed to disk, so that the store can
  // flush outside its mutex and concurrent commits share one flush (group commit).
  // CommitTicket() names everything this connection has committed so far; call it between
  // statements, under the store's mutex. WaitDurable(ticket) returns once all of that is on
  // disk; it is the one thread-safe call here. A failed flush ends the process (LogFlusher
  // says why). PostgreSQL commits are durable when COMMIT returns: both are no-ops there.
  // Whether a transaction is open on this connection (a Transaction then nests as a
  // savepoint).
  virtual bool InTransaction() const = 0;

  virtual int64_t CommitTicket() { return 0; }
  virtual void WaitDurable(int64_t /*ticket*/) {}

  // Keeps the SQLite write-ahead log bounded: once commits have put about 4 MiB in it,
  // copies it back into the database (a passive checkpoint, which never waits), so that
  // the next commit starts the log over and cuts the file to 16 MiB (journal_size_limit).
  // Call it under the store's mutex when no statement is open on this connection: with one
  // open, a checkpoint fails (SQLITE_LOCKED), as SQLite's own after each commit did while
  // the committing call still held its statements, and the log grew without end. No-op
  // for PostgreSQL, which manages its own.
  virtual void Checkpoint() {}

 protected:
  friend class Transaction;
  // What starts a write transaction.
  virtual const char* BeginStatement() const = 0;
};

// Commits on Commit(); rolls back when destroyed without it. Opened while another
// transaction is open (Store::Together with one transaction), it is a savepoint inside it:
// Commit() keeps its writes for the outer commit, and destruction without Commit() undoes
// only its own.
class Transaction {
 public:
  explicit Transaction(Db* db);
  ~Transaction();
  Status status() const { return status_; }
  Status Commit();

 private:
  Db* db_;
  Status status_;
  bool nested_ = false;
  bool done_ = false;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_DB_H_
