#include "daemon/store/sqlite_db.h"

#include <sqlite3.h>

#include "daemon/store/migration_runner.h"
#include "daemon/store/migrations.h"

namespace farm::store {
namespace {

Status SqlError(sqlite3* db, const std::string& what) {
  int code = sqlite3_errcode(db);
  std::string msg = what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_CONSTRAINT) return Status::AlreadyExists(msg);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

class SqliteStmt final : public Stmt {
 public:
  SqliteStmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteStmt() override { sqlite3_finalize(stmt_); }
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  Result<bool> Step() override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqlError(db_, "sqlite step");
  }

  int64_t Int(int col) const override { return sqlite3_column_int64(stmt_, col); }

  std::string Text(int col) const override {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }

 protected:
  void BindInt(int64_t v) override { sqlite3_bind_int64(stmt_, next_++, v); }
  void BindText(const std::string& v) override {
    sqlite3_bind_text(stmt_, next_++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBytes(const std::string& v) override {
    sqlite3_bind_blob(stmt_, next_++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int next_ = 1;
};

class SqliteDb final : public Db {
 public:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  ~SqliteDb() override { sqlite3_close_v2(db_); }

  Dialect dialect() const override { return Dialect::kSqlite; }

  Status Exec(const std::string& sql) override {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return Status::Internal("sqlite: " + msg);
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<Stmt>> Prepare(std::string_view sql) override {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      return SqlError(db_, "prepare " + std::string(sql.substr(0, 60)));
    }
    return std::unique_ptr<Stmt>(new SqliteStmt(db_, stmt));
  }

  int64_t LastInsertId() const override { return sqlite3_last_insert_rowid(db_); }
  int Changes() const override { return sqlite3_changes(db_); }
  Status Migrate() override { return MigrateSchema(*this, Migrations()); }

 protected:
  const char* BeginStatement() const override { return "BEGIN IMMEDIATE"; }

 private:
  sqlite3* db_;
};

}  // namespace

Status Stmt::Run() {
  for (int i = 0; i < 1'000'000; ++i) {
    auto r = Step();
    if (!r.ok()) return r.status();
    if (!r.value()) return Status::Ok();
  }
  return Status::Internal("statement returned too many rows");
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  std::unique_ptr<Db> db(new SqliteDb(raw));
  if (rc != SQLITE_OK) return SqlError(raw, "cannot open database " + path);
  sqlite3_busy_timeout(raw, 5000);
  FARM_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode=WAL"));
  FARM_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON"));
  FARM_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=FULL"));
  return db;
}

Transaction::Transaction(Db* db) : db_(db) { status_ = db_->Exec(db_->BeginStatement()); }

Transaction::~Transaction() {
  if (!done_ && status_.ok()) (void)db_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  done_ = true;
  return db_->Exec("COMMIT");
}

}  // namespace farm::store
