#include <sqlite3.h>

#include <unordered_map>
#include <vector>

#include "daemon/store/sql/db.h"
#include "daemon/store/sql/log_flusher.h"
#include "daemon/store/sql/migration_runner.h"
#include "daemon/store/sql/migrations.h"

namespace farm::store {
namespace {

Status SqlError(sqlite3* db, const std::string& what) {
  int code = sqlite3_errcode(db);
  std::string msg = what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_CONSTRAINT) return Status::AlreadyExists(msg);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

// Prepared statements a connection keeps for reuse, by SQL text: parsing and planning a
// statement costs more than running most of the store's queries. A statement is taken out
// while in use, so two live statements never share one.
class StatementCache {
 public:
  // Enough for every query the store writes; the IN lists of SelectByIds vary in length.
  static constexpr size_t kMaxStatements = 512;

  ~StatementCache() { Clear(); }
  sqlite3_stmt* Take(std::string_view sql) {
    auto it = free_.find(std::string(sql));
    if (it == free_.end() || it->second.empty()) return nullptr;
    sqlite3_stmt* s = it->second.back();
    it->second.pop_back();
    --size_;
    return s;
  }
  // Resets `stmt`, prepared from `sql`, and keeps it. A full cache starts over, so that
  // statements used once (long IN lists) cannot crowd out the ones used all the time.
  void Give(const std::string& sql, sqlite3_stmt* stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (size_ >= kMaxStatements) Clear();
    free_[sql].push_back(stmt);
    ++size_;
  }

 private:
  void Clear() {
    for (auto& [sql, free] : free_) {
      for (sqlite3_stmt* s : free) sqlite3_finalize(s);
    }
    free_.clear();
    size_ = 0;
  }

  std::unordered_map<std::string, std::vector<sqlite3_stmt*>> free_;
  size_t size_ = 0;
};

class SqliteStmt final : public Stmt {
 public:
  SqliteStmt(sqlite3* db, sqlite3_stmt* stmt, StatementCache* cache, std::string_view sql)
      : db_(db), stmt_(stmt), cache_(cache), sql_(sql) {}
  ~SqliteStmt() override { cache_->Give(sql_, stmt_); }
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
  StatementCache* cache_;
  std::string sql_;  // the text it was prepared from: its key in the cache
  int next_ = 1;
};

class SqliteDb final : public Db {
 public:
  explicit SqliteDb(sqlite3* db) : db_(db) {
    if (db_ != nullptr) sqlite3_wal_hook(db_, &SqliteDb::OnWalCommit, this);
  }
  ~SqliteDb() override {
    cache_.reset();
    sqlite3_close_v2(db_);
  }

  Dialect dialect() const override { return Dialect::kSqlite; }

  Status Exec(const std::string& sql) override {
    if (sql.find(';') == std::string::npos) {
      // One statement (BEGIN, COMMIT, a PRAGMA): reuse its prepared form.
      auto stmt = Prepare(sql);
      Status st = stmt.ok() ? stmt.value()->Run() : stmt.status();
      if (!st.ok()) return Status::Internal("sqlite: " + std::string(sqlite3_errmsg(db_)));
      return Status::Ok();
    }
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return Status::Internal("sqlite: " + msg);
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<Stmt>> Prepare(std::string_view sql) override {
    sqlite3_stmt* stmt = cache_->Take(sql);
    if (stmt == nullptr &&
        sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &stmt, nullptr) != SQLITE_OK) {
      return SqlError(db_, "prepare " + std::string(sql.substr(0, 60)));
    }
    return std::unique_ptr<Stmt>(new SqliteStmt(db_, stmt, cache_.get(), sql));
  }

  bool InTransaction() const override { return sqlite3_get_autocommit(db_) == 0; }
  int64_t LastInsertId() const override { return sqlite3_last_insert_rowid(db_); }
  int Changes() const override { return sqlite3_changes(db_); }
  Status Migrate() override {
    FARM_RETURN_IF_ERROR(MigrateSchema(*this, Migrations()));
    WaitDurable(CommitTicket());
    return Status::Ok();
  }

  int64_t CommitTicket() override { return flusher_.written(); }
  void WaitDurable(int64_t ticket) override { flusher_.WaitFlushed(ticket); }
  void Checkpoint() override {
    if (log_pages_ < kCheckpointPages || InTransaction()) return;
    log_pages_ = 0;
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }

 protected:
  const char* BeginStatement() const override { return "BEGIN IMMEDIATE"; }

 private:
  // SQLite calls this after a commit has written its pages to the log (not for a
  // transaction that changed nothing), so the ticket it takes covers that commit. Setting
  // the hook replaces SQLite's own checkpoint after commits; Checkpoint() does it instead,
  // once the commit's statements are closed.
  static int OnWalCommit(void* self, sqlite3*, const char*, int log_pages) {
    auto* db = static_cast<SqliteDb*>(self);
    db->flusher_.Written();
    db->log_pages_ = log_pages;
    return SQLITE_OK;
  }
  static constexpr int kCheckpointPages = 1000;
  static std::string WalPath(sqlite3* db) {
    const char* main = db ? sqlite3_db_filename(db, "main") : nullptr;
    return main && *main ? std::string(main) + "-wal" : std::string();
  }

  sqlite3* db_;
  int log_pages_ = 0;  // pages in the write-ahead log after the last commit
  std::unique_ptr<StatementCache> cache_ = std::make_unique<StatementCache>();
  LogFlusher flusher_{WalPath(db_)};
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
  // A commit is written to the log without a flush; the store flushes the log outside its
  // mutex before answering (Db::WaitDurable), so concurrent commits share one flush and a
  // commit is acknowledged only once on disk, as with synchronous=FULL.
  FARM_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=NORMAL"));
  // Each time the write-ahead log starts over (Checkpoint), its file is cut back to this.
  FARM_RETURN_IF_ERROR(db->Exec("PRAGMA journal_size_limit=" + std::to_string(16 << 20)));
  return db;
}

namespace {
// One name serves every nesting level: RELEASE and ROLLBACK TO name the innermost.
constexpr char kSavepoint[] = "SAVEPOINT farm_nested";
constexpr char kReleaseSavepoint[] = "RELEASE SAVEPOINT farm_nested";
constexpr char kRollbackToSavepoint[] = "ROLLBACK TO SAVEPOINT farm_nested";
}  // namespace

Transaction::Transaction(Db* db) : db_(db), nested_(db->InTransaction()) {
  status_ = db_->Exec(nested_ ? kSavepoint : db_->BeginStatement());
}

Transaction::~Transaction() {
  if (done_ || !status_.ok()) return;
  if (!nested_) {
    (void)db_->Exec("ROLLBACK");
    return;
  }
  (void)db_->Exec(kRollbackToSavepoint);
  (void)db_->Exec(kReleaseSavepoint);
}

Status Transaction::Commit() {
  done_ = true;
  Status committed = db_->Exec(nested_ ? kReleaseSavepoint : "COMMIT");
  // A COMMIT that failed (the disk, say) may leave the transaction open: end it.
  if (!committed.ok() && !nested_ && db_->InTransaction()) (void)db_->Exec("ROLLBACK");
  return committed;
}

}  // namespace farm::store
