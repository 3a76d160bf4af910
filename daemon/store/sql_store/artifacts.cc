// ArtifactStore: the wheels jobs uploaded.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kArtifactColumns[] =
    "id, job_id, attempt, filename, sha256, size, manifest, validation, created_ms, "
    "validation_state";

ArtifactRow ArtifactFromRow(const Stmt& s) {
  return ReadMembers<ArtifactRow>(s, &ArtifactRow::id, &ArtifactRow::job_id, &ArtifactRow::attempt,
                                  &ArtifactRow::filename, &ArtifactRow::sha256, &ArtifactRow::size,
                                  &ArtifactRow::manifest, &ArtifactRow::validation,
                                  &ArtifactRow::created_ms, &ArtifactRow::validation_state);
}

}  // namespace

ArtifactRow ArtifactFromStmt(const Stmt& s) { return ArtifactFromRow(s); }
const char* ArtifactColumns() { return kArtifactColumns; }

Result<ArtifactRow> SqlStore::InsertArtifact(const ArtifactRow& a) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto q, db_->Prepare(std::string("SELECT ") + kArtifactColumns +
                           " FROM artifacts WHERE job_id = ? AND attempt = ? AND filename = ?"));
  q->Bind(a.job_id).Bind(a.attempt).Bind(a.filename);
  FARM_ASSIGN_OR_RETURN(bool exists, q->Step());
  if (exists) {
    ArtifactRow old = ArtifactFromRow(*q);
    if (old.sha256 == a.sha256) return old;  // the same upload, repeated
    return Status::AlreadyExists("artifact " + a.filename + " of job " + std::to_string(a.job_id) +
                                 " already uploaded with sha256 " + old.sha256);
  }
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO artifacts(job_id, attempt, filename, sha256, size, manifest, validation, "
          "created_ms, validation_state) VALUES (?,?,?,?,?,?,?,?,?)"));
  s->Bind(a.job_id)
      .Bind(a.attempt)
      .Bind(a.filename)
      .Bind(a.sha256)
      .Bind(a.size)
      .BindBlob(a.manifest)
      .BindBlob(a.validation)
      .Bind(a.created_ms)
      .Bind(a.validation_state);
  FARM_RETURN_IF_ERROR(s->Run());
  ArtifactRow out = a;
  out.id = db_->LastInsertId();
  Bump();
  return out;
}

Result<std::vector<ArtifactRow>> SqlStore::ListArtifacts(int64_t job_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kArtifactColumns +
                                             " FROM artifacts WHERE job_id = ? ORDER BY id"));
  s->Bind(job_id);
  return CollectRows(*s, 100000, ArtifactFromRow);
}

Result<ArtifactRow> SqlStore::GetArtifact(int64_t id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kArtifactColumns +
                                             " FROM artifacts WHERE id = ?"));
  s->Bind(id);
  return ReadOneRow(*s, ArtifactFromRow, "no artifact " + std::to_string(id));
}

}  // namespace farm::store
