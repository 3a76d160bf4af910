#include "daemon/store/sql/pg_db.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "common/log.h"
#include "daemon/store/sql/migration_runner.h"
#include "daemon/store/sql/migrations.h"

namespace farm::store {
namespace {

constexpr Oid kByteaOid = 17;
constexpr Oid kBoolOid = 16;
// pg_advisory_lock keys: "farmd" as a number, and the migration lock next to it.
constexpr int64_t kActiveLockKey = 0x6661726d64;
constexpr int64_t kMigrationLockKey = kActiveLockKey + 1;

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool StartsWithWord(std::string_view s, size_t at, std::string_view word) {
  if (at + word.size() > s.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(s[at + i])) != word[i]) return false;
  }
  return at == 0 || !IsIdentChar(s[at - 1]);
}

// The index of the ')' closing the '(' at `open`, and whether a comma sits at its top
// level; npos when unbalanced.
std::pair<size_t, bool> CloseParen(std::string_view s, size_t open) {
  int depth = 0;
  bool comma = false;
  bool quoted = false;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\'') quoted = !quoted;
    if (quoted) continue;
    if (c == '(') ++depth;
    if (c == ')' && --depth == 0) return {i, comma};
    if (c == ',' && depth == 1) comma = true;
  }
  return {std::string_view::npos, false};
}

// ?, ?NNN -> $n and the two-argument MAX/MIN, outside string literals.
std::string RewriteTokens(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int param = 0;
  bool quoted = false;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (!quoted && c == '?') {
      // ?NNN names parameter NNN; a bare ? is the one after the largest so far (SQLite's rule).
      size_t digits = i + 1;
      while (digits < sql.size() && std::isdigit(static_cast<unsigned char>(sql[digits]))) {
        ++digits;
      }
      if (digits > i + 1) {
        int n = std::stoi(std::string(sql.substr(i + 1, digits - i - 1)));
        param = std::max(param, n);
        out += "$" + std::to_string(n);
        i = digits - 1;
      } else {
        out += "$" + std::to_string(++param);
      }
      continue;
    }
    if (!quoted && (StartsWithWord(sql, i, "MAX(") || StartsWithWord(sql, i, "MIN("))) {
      if (CloseParen(sql, i + 3).second) {
        out += std::toupper(static_cast<unsigned char>(c)) == 'M' &&
                       std::toupper(static_cast<unsigned char>(sql[i + 1])) == 'A'
                   ? "GREATEST"
                   : "LEAST";
        i += 2;
        continue;
      }
    }
    out += c;
  }
  return out;
}

std::string TrimEnd(std::string s) {
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) || s.back() == ';')) {
    s.pop_back();
  }
  return s;
}

std::vector<std::string> SplitColumns(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : list) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Result<std::string> ReplaceClause(const std::string& rest, const PrimaryKeyFn& primary_key) {
  size_t open = rest.find('(');
  size_t close = rest.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) {
    return Status::Internal("INSERT OR REPLACE without a column list: " + rest.substr(0, 60));
  }
  std::string table = TrimEnd(rest.substr(0, open));
  FARM_ASSIGN_OR_RETURN(auto key, primary_key(table));
  if (key.empty()) return Status::Internal("INSERT OR REPLACE into " + table + " without a key");
  std::string target, set;
  for (const auto& k : key) target += (target.empty() ? "" : ", ") + k;
  for (const auto& c : SplitColumns(std::string_view(rest).substr(open + 1, close - open - 1))) {
    bool is_key = false;
    for (const auto& k : key) is_key = is_key || k == c;
    if (!is_key) set += (set.empty() ? "" : ", ") + c + " = EXCLUDED." + c;
  }
  return " ON CONFLICT (" + target + ")" + (set.empty() ? " DO NOTHING" : " DO UPDATE SET " + set);
}

Status PgError(PGconn* conn, const PGresult* res, const std::string& what) {
  std::string msg = what + ": " + (res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state ? state : "";
  if (PQstatus(conn) == CONNECTION_BAD || code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0) {
    return Status::Unavailable(msg);
  }
  // Worded as SQLite words it, which callers look for.
  if (code == "23505") return Status::AlreadyExists("UNIQUE constraint failed: " + msg);
  if (code.rfind("23", 0) == 0) return Status::AlreadyExists(msg);  // as SQLITE_CONSTRAINT
  if (code.rfind("40", 0) == 0) return Status::Unavailable(msg);    // serialization, deadlock
  return Status::Internal(msg);
}

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

// The connection, and whether the store has a transaction open on it. libpq notices a lost
// connection (the server restarted or ended the session, the network dropped it) only when
// a statement fails; the next statement outside a transaction connects again with the same
// parameters. Inside a transaction it does not: the server has rolled the transaction back,
// and running its remaining statements on a new connection would commit them one by one.
// They fail until the store ends the transaction (COMMIT fails, ROLLBACK succeeds).
class PgSession {
 public:
  PgSession(PGconn* conn, bool reconnect) : conn_(conn), reconnect_(reconnect) {}
  ~PgSession() { PQfinish(conn_); }
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;

  PGconn* conn() const { return conn_; }

  // Whether `sql` may run now, reconnecting first when that is safe. Sets `*done` when
  // `sql` needs no server: a ROLLBACK of a transaction that the lost connection ended.
  Status Ready(std::string_view sql, bool* done) {
    *done = false;
    if (PQstatus(conn_) != CONNECTION_BAD) return Status::Ok();
    if (in_transaction_) {
      if (sql == "ROLLBACK" || sql == "COMMIT") in_transaction_ = false;
      if (sql == "ROLLBACK") {
        *done = true;
        return Status::Ok();
      }
      return Status::Unavailable(
          "postgres: the connection was lost inside a transaction, which the server rolled "
          "back; nothing of it was committed");
    }
    if (!reconnect_) return Status::Unavailable("postgres: the connection was lost");
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(conn_);
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      return Status::Unavailable("cannot connect to PostgreSQL again: " + msg);
    }
    log::Warn("the connection to PostgreSQL was lost; connected again");
    return Configure();
  }

  // Session settings, on every connection: quiet NOTICEs (CREATE ... IF NOT EXISTS).
  Status Configure() {
    ResultPtr res(PQexec(conn_, "SET client_min_messages = warning"), &PQclear);
    if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      return PgError(conn_, res.get(), "postgres: SET client_min_messages");
    }
    return Status::Ok();
  }

  // Follows the store's BEGIN, COMMIT and ROLLBACK (run by Exec).
  void Ran(std::string_view sql) {
    if (sql == "BEGIN") in_transaction_ = true;
    if (sql == "COMMIT" || sql == "ROLLBACK") in_transaction_ = false;
  }
  bool InTransaction() const {
    if (PQstatus(conn_) == CONNECTION_BAD) return in_transaction_;
    return PQtransactionStatus(conn_) != PQTRANS_IDLE;
  }

 private:
  PGconn* conn_;
  bool reconnect_;
  bool in_transaction_ = false;  // a BEGIN ran and no COMMIT or ROLLBACK since
};

class PgStmt final : public Stmt {
 public:
  PgStmt(PgSession* session, std::string sql, int64_t* changes)
      : session_(session), sql_(std::move(sql)), changes_(changes) {}

  Result<bool> Step() override {
    if (!res_) {
      FARM_RETURN_IF_ERROR(Execute());
      row_ = 0;
    } else {
      ++row_;
    }
    return row_ < PQntuples(res_.get());
  }

  int64_t Int(int col) const override {
    if (PQgetisnull(res_.get(), row_, col)) return 0;
    const char* v = PQgetvalue(res_.get(), row_, col);
    if (PQftype(res_.get(), col) == kBoolOid) return v[0] == 't' ? 1 : 0;
    return std::strtoll(v, nullptr, 10);
  }

  std::string Text(int col) const override {
    if (PQgetisnull(res_.get(), row_, col)) return "";
    const char* v = PQgetvalue(res_.get(), row_, col);
    if (PQftype(res_.get(), col) != kByteaOid) {
      return std::string(v, static_cast<size_t>(PQgetlength(res_.get(), row_, col)));
    }
    size_t n = 0;
    unsigned char* bytes = PQunescapeBytea(reinterpret_cast<const unsigned char*>(v), &n);
    std::string out(reinterpret_cast<const char*>(bytes), n);
    PQfreemem(bytes);
    return out;
  }

 protected:
  void BindInt(int64_t v) override { Add(std::to_string(v), 0, 0); }
  void BindText(const std::string& v) override { Add(v, 0, 1); }
  void BindBytes(const std::string& v) override { Add(v, kByteaOid, 1); }

 private:
  void Add(std::string value, Oid type, int format) {
    values_.push_back(std::move(value));
    types_.push_back(type);
    formats_.push_back(format);
  }

  Status Execute() {
    bool done = false;
    FARM_RETURN_IF_ERROR(session_->Ready(sql_, &done));
    std::vector<const char*> values;
    std::vector<int> lengths;
    for (const auto& v : values_) {
      values.push_back(v.c_str());
      lengths.push_back(static_cast<int>(v.size()));
    }
    PGconn* conn = session_->conn();
    res_.reset(PQexecParams(conn, sql_.c_str(), static_cast<int>(values_.size()), types_.data(),
                            values.data(), lengths.data(), formats_.data(), 0));
    ExecStatusType st = res_ ? PQresultStatus(res_.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      Status err = PgError(conn, res_.get(), "postgres: " + sql_.substr(0, 80));
      res_.reset(PQmakeEmptyPGresult(conn, PGRES_COMMAND_OK));
      return err;
    }
    *changes_ = std::atoll(PQcmdTuples(res_.get()));
    return Status::Ok();
  }

  PgSession* session_;
  std::string sql_;
  int64_t* changes_;
  std::vector<std::string> values_;
  std::vector<Oid> types_;
  std::vector<int> formats_;
  ResultPtr res_{nullptr, &PQclear};
  int row_ = 0;
};

class PgDb final : public Db {
 public:
  PgDb(PGconn* conn, bool reconnect) : session_(conn, reconnect) {}

  Dialect dialect() const override { return Dialect::kPostgres; }
  // The session settings; the session applies them again on every new connection.
  Status Configure() { return session_.Configure(); }

  bool InTransaction() const override { return session_.InTransaction(); }

  Status Exec(const std::string& sql) override {
    bool done = false;
    FARM_RETURN_IF_ERROR(session_.Ready(sql, &done));
    if (done) return Status::Ok();
    ResultPtr res(PQexec(session_.conn(), sql.c_str()), &PQclear);
    ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      // A failed COMMIT or ROLLBACK still ends the transaction; a failed BEGIN opens none.
      if (sql != "BEGIN") session_.Ran(sql);
      return PgError(session_.conn(), res.get(), "postgres: " + sql.substr(0, 80));
    }
    session_.Ran(sql);
    // COMMIT of a transaction a failed statement aborted answers ROLLBACK, not an error.
    if (sql == "COMMIT" && std::string(PQcmdStatus(res.get())) == "ROLLBACK") {
      return Status::Aborted("postgres: the transaction was rolled back by an earlier error");
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<Stmt>> Prepare(std::string_view sql) override {
    FARM_ASSIGN_OR_RETURN(
        std::string text,
        TranslateToPostgres(sql, [this](const std::string& table) { return PrimaryKey(table); }));
    return std::unique_ptr<Stmt>(new PgStmt(&session_, std::move(text), &changes_));
  }

  int64_t LastInsertId() const override {
    ResultPtr res(PQexec(session_.conn(), "SELECT lastval()"), &PQclear);
    if (!res || PQresultStatus(res.get()) != PGRES_TUPLES_OK || PQntuples(res.get()) != 1) {
      return 0;
    }
    return std::strtoll(PQgetvalue(res.get(), 0, 0), nullptr, 10);
  }

  int Changes() const override { return static_cast<int>(changes_); }

  Status Migrate() override {
    // Two farmds starting together must not both apply a migration.
    FARM_RETURN_IF_ERROR(
        Exec("SELECT pg_advisory_lock(" + std::to_string(kMigrationLockKey) + ")"));
    Status s = MigrateSchema(*this, PostgresMigrations());
    Status unlocked = Exec("SELECT pg_advisory_unlock(" + std::to_string(kMigrationLockKey) + ")");
    return s.ok() ? unlocked : s;
  }

 protected:
  const char* BeginStatement() const override { return "BEGIN"; }

 private:
  Result<std::vector<std::string>> PrimaryKey(const std::string& table) {
    auto it = keys_.find(table);
    if (it != keys_.end()) return it->second;
    FARM_ASSIGN_OR_RETURN(
        auto q,
        Prepare("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(?) AND i.indisprimary "
                "ORDER BY a.attnum"));
    q->Bind(table);
    std::vector<std::string> key;
    for (int i = 0; i < 64; ++i) {
      FARM_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      key.push_back(q->Text(0));
    }
    keys_[table] = key;
    return key;
  }

  PgSession session_;  // owns the connection
  int64_t changes_ = 0;
  std::map<std::string, std::vector<std::string>> keys_;
};

}  // namespace

Result<std::string> TranslateToPostgres(std::string_view sql, const PrimaryKeyFn& primary_key) {
  std::string out = RewriteTokens(sql);
  size_t start = 0;
  while (start < out.size() && std::isspace(static_cast<unsigned char>(out[start]))) ++start;
  constexpr std::string_view kIgnore = "INSERT OR IGNORE INTO ";
  constexpr std::string_view kReplace = "INSERT OR REPLACE INTO ";
  if (StartsWithWord(out, start, kIgnore)) {
    return "INSERT INTO " + TrimEnd(out.substr(start + kIgnore.size())) + " ON CONFLICT DO NOTHING";
  }
  if (StartsWithWord(out, start, kReplace)) {
    std::string rest = TrimEnd(out.substr(start + kReplace.size()));
    FARM_ASSIGN_OR_RETURN(std::string clause, ReplaceClause(rest, primary_key));
    return "INSERT INTO " + rest + clause;
  }
  return out;
}

Result<std::unique_ptr<Db>> OpenPgDb(const std::string& url, bool reconnect) {
  // Defaults the URL may override (it comes last): give up on a dead server or network
  // within about 30 s instead of blocking the store, or the lock check, for hours.
  const char* keys[] = {"connect_timeout",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "tcp_user_timeout",
                        "dbname",
                        nullptr};
  const char* values[] = {"10", "10", "5", "3", "30000", url.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  std::unique_ptr<PgDb> db(new PgDb(conn, reconnect));
  if (!conn || PQstatus(conn) != CONNECTION_OK) {
    std::string msg = conn ? PQerrorMessage(conn) : "out of memory";
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Status::Unavailable("cannot connect to PostgreSQL: " + msg);
  }
  // Quiet NOTICEs (CREATE ... IF NOT EXISTS) instead of libpq printing them to stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  FARM_RETURN_IF_ERROR(db->Configure());
  return std::unique_ptr<Db>(std::move(db));
}

Status WaitForActiveLock(Db& db, const std::function<void()>& on_standby) {
  if (db.dialect() != Dialect::kPostgres) {
    return Status::InvalidArgument("the active lock is a PostgreSQL lock");
  }
  const std::string key = std::to_string(kActiveLockKey);
  FARM_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT pg_try_advisory_lock(" + key + ")"));
  FARM_ASSIGN_OR_RETURN(bool row, q->Step());
  if (row && q->Int(0) == 1) return Status::Ok();
  if (on_standby) on_standby();
  // Blocks until the holder's session ends (it exits, is killed, or its connection drops).
  return db.Exec("SELECT pg_advisory_lock(" + key + ")");
}

}  // namespace farm::store
