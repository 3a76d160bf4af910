// Signed provenance of wheels (migration 018, docs/provenance.md): the DSSE envelopes farmd
// signed about each wheel's bytes, and their re-signing when a key is revoked. Each call is
// one statement under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kProvenanceColumns[] =
    "id, sha256, kind, job_id, attempt, keyid, envelope, created_ms";

ProvenanceRow ProvenanceFromRow(const Stmt& s) {
  ProvenanceRow r;
  r.id = s.Int(0);
  r.sha256 = s.Text(1);
  r.kind = s.Text(2);
  r.job_id = s.Int(3);
  r.attempt = static_cast<int>(s.Int(4));
  r.keyid = s.Text(5);
  r.envelope = s.Text(6);
  r.created_ms = s.Int(7);
  return r;
}

}  // namespace

Result<bool> SqlStore::InsertProvenance(const ProvenanceRow& r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("INSERT OR IGNORE INTO provenance(sha256, kind, job_id, attempt, "
                           "keyid, envelope, created_ms) VALUES (?,?,?,?,?,?,?)"));
  s->Bind(r.sha256)
      .Bind(r.kind)
      .Bind(r.job_id)
      .Bind(r.attempt)
      .Bind(r.keyid)
      .BindBlob(r.envelope)
      .Bind(r.created_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  bool stored = db_->Changes() > 0;
  if (stored) Bump();
  return stored;
}

Result<std::vector<ProvenanceRow>> SqlStore::ListProvenance(const std::string& sha256, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kProvenanceColumns +
                                             " FROM provenance WHERE sha256 = ?"
                                             " ORDER BY kind = 'build' DESC, id LIMIT ?"));
  s->Bind(sha256).Bind(limit);
  return CollectRows(*s, limit, ProvenanceFromRow);
}

Result<std::vector<ProvenanceRow>> SqlStore::ListProvenanceSignedBy(const std::string& keyid,
                                                                    int64_t after_id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kProvenanceColumns +
                                             " FROM provenance WHERE keyid = ? AND id > ?"
                                             " ORDER BY id LIMIT ?"));
  s->Bind(keyid).Bind(after_id).Bind(limit);
  return CollectRows(*s, limit, ProvenanceFromRow);
}

Status SqlStore::ResignProvenance(int64_t id, const std::string& keyid,
                                  const std::string& envelope) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("UPDATE provenance SET keyid = ?, envelope = ? WHERE id = ?"));
  s->Bind(keyid).BindBlob(envelope).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no provenance row " + std::to_string(id));
  Bump();
  return Status::Ok();
}

}  // namespace farm::store
