// TokenStore: the tokens farmd issued, by their sha256.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kTokenColumns[] = "hash, name, role, worker_id, created_ms, expires_ms, revoked_ms";

TokenRow TokenFromRow(const Stmt& s) {
  return TokenRow{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4), s.Int(5), s.Int(6)};
}

}  // namespace

Status SqlStore::InsertToken(const TokenRow& t) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("INSERT INTO tokens(hash, name, role, worker_id, created_ms, expires_ms) "
                   "VALUES (?,?,?,?,?,?)"));
  s->Bind(t.hash).Bind(t.name).Bind(t.role).Bind(t.worker_id).Bind(t.created_ms).Bind(t.expires_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  return Status::Ok();
}

Result<TokenRow> SqlStore::FindToken(const std::string& hash) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kTokenColumns + " FROM tokens WHERE hash = ?"));
  s->Bind(hash);
  return ReadOneRow(*s, TokenFromRow, "no such token");
}

Result<std::vector<TokenRow>> SqlStore::ListTokens() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kTokenColumns +
                                             " FROM tokens ORDER BY created_ms, hash"));
  return CollectRows(*s, 1'000'000, TokenFromRow);
}

Result<TokenRow> SqlStore::RevokeToken(const std::string& hash_prefix, int64_t now_ms) {
  if (hash_prefix.size() < 8 || hash_prefix.size() > 64 ||
      hash_prefix.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::InvalidArgument("a token id is 8 to 64 lower-case hex digits, got \"" +
                                   hash_prefix + "\"");
  }
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kTokenColumns +
                                             " FROM tokens WHERE substr(hash, 1, ?) = ? LIMIT 2"));
  s->Bind(static_cast<int64_t>(hash_prefix.size())).Bind(hash_prefix);
  FARM_ASSIGN_OR_RETURN(std::vector<TokenRow> found, CollectRows(*s, 2, TokenFromRow));
  if (found.empty()) return Status::NotFound("no token " + hash_prefix);
  if (found.size() > 1) {
    return Status::InvalidArgument("several tokens start with " + hash_prefix +
                                   "; give more digits");
  }
  if (found[0].revoked_ms > 0) {
    return Status::FailedPrecondition("token " + hash_prefix + " (" + found[0].name +
                                      ") is already revoked");
  }
  FARM_ASSIGN_OR_RETURN(auto u, db_->Prepare("UPDATE tokens SET revoked_ms = ? WHERE hash = ?"));
  u->Bind(now_ms).Bind(found[0].hash);
  FARM_RETURN_IF_ERROR(u->Run());
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  found[0].revoked_ms = now_ms;
  return found[0];
}

Result<int64_t> SqlStore::CountTokens() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT COUNT(*) FROM tokens"));
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

}  // namespace farm::store
