// Signed provenance of wheels (migration 018, docs/provenance.md): the DSSE envelopes farmd
// signed about each wheel's bytes, and their re-signing when a key is revoked. Each call is
// one statement under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kProvenanceColumns[] =
    "id, sha256, kind, job_id, attempt, keyid, envelope, created_ms";

ProvenanceRow ProvenanceFromRow(const Stmt& s) {
  return ReadMembers<ProvenanceRow>(s, &ProvenanceRow::id, &ProvenanceRow::sha256,
                                    &ProvenanceRow::kind, &ProvenanceRow::job_id,
                                    &ProvenanceRow::attempt, &ProvenanceRow::keyid,
                                    &ProvenanceRow::envelope, &ProvenanceRow::created_ms);
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
  return RunWrite(*s);
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
  return RunWriteOfOne(*s, "no provenance row " + std::to_string(id));
}

}  // namespace farm::store
