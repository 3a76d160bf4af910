// What farmd's pull-through cache downloaded (migration 025, daemon/store/mirror_store.h).
// Each call runs under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

MirrorStore* AsMirrorStore(Store* store) { return dynamic_cast<MirrorStore*>(store); }

namespace {

constexpr char kMirrorBlobColumns[] =
    "sha256, size, source, fetched_ms, last_used_ms, metadata_sha256";

MirrorBlobRow MirrorBlobFromRow(const Stmt& s) {
  return ReadMembers<MirrorBlobRow>(s, &MirrorBlobRow::sha256, &MirrorBlobRow::size,
                                    &MirrorBlobRow::source, &MirrorBlobRow::fetched_ms,
                                    &MirrorBlobRow::last_used_ms, &MirrorBlobRow::metadata_sha256);
}

MirrorFileRow MirrorFileFromRow(const Stmt& s) {
  return ReadMembers<MirrorFileRow>(s, &MirrorFileRow::source, &MirrorFileRow::sha256,
                                    &MirrorFileRow::filename, &MirrorFileRow::size,
                                    &MirrorFileRow::metadata_sha256);
}

// How many rows of the farm besides the mirror's name the blob `?1` (a number in both
// dialects, where EXISTS would be a boolean in PostgreSQL).
constexpr char kNamedElsewhere[] =
    "SELECT (SELECT COUNT(*) FROM artifacts WHERE sha256 = ?1)"
    " + (SELECT COUNT(*) FROM publications WHERE sha256 = ?1)"
    " + (SELECT COUNT(*) FROM source_archives WHERE sha256 = ?1)"
    " + (SELECT COUNT(*) FROM upstream_preloads WHERE sha256 = ?1)";

}  // namespace

Result<bool> SqlStore::RecordMirrorFile(const MirrorBlobRow& b, const std::string& filename,
                                        const std::string& metadata) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(
      auto blob, db_->Prepare(std::string("INSERT INTO mirror_blobs(") + kMirrorBlobColumns +
                              ", metadata) VALUES (?,?,?,?,?,?,?) ON CONFLICT(sha256) DO NOTHING"));
  blob->Bind(b.sha256)
      .Bind(b.size)
      .Bind(b.source)
      .Bind(b.fetched_ms)
      .Bind(b.last_used_ms)
      .Bind(b.metadata_sha256)
      .Bind(metadata);
  FARM_RETURN_IF_ERROR(blob->Run());
  const bool fresh = db_->Changes() > 0;
  if (!fresh) {
    FARM_ASSIGN_OR_RETURN(
        auto touch, db_->Prepare("UPDATE mirror_blobs SET last_used_ms = MAX(last_used_ms, ?) "
                                 "WHERE sha256 = ?"));
    touch->Bind(b.last_used_ms).Bind(b.sha256);
    FARM_RETURN_IF_ERROR(touch->Run());
  }
  FARM_ASSIGN_OR_RETURN(auto name,
                        db_->Prepare("INSERT INTO mirror_files(source, sha256, filename) "
                                     "VALUES (?,?,?) ON CONFLICT(source, sha256, filename) "
                                     "DO NOTHING"));
  name->Bind(b.source).Bind(b.sha256).Bind(filename);
  FARM_RETURN_IF_ERROR(name->Run());
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return fresh;
}

Status SqlStore::TouchMirrorBlobs(const std::vector<std::pair<std::string, int64_t>>& uses) {
  if (uses.empty()) return Status::Ok();
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  for (const auto& [sha256, at_ms] : uses) {
    FARM_ASSIGN_OR_RETURN(
        auto s, db_->Prepare("UPDATE mirror_blobs SET last_used_ms = MAX(last_used_ms, ?) "
                             "WHERE sha256 = ?"));
    s->Bind(at_ms).Bind(sha256);
    FARM_RETURN_IF_ERROR(s->Run());
  }
  return txn.Commit();
}

Result<std::vector<MirrorFileRow>> SqlStore::ListMirrorFiles() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT f.source, f.sha256, f.filename, b.size, b.metadata_sha256 "
                           "FROM mirror_files f JOIN mirror_blobs b ON b.sha256 = f.sha256 "
                           "ORDER BY f.source, f.sha256, f.filename"));
  return CollectRows(*s, std::numeric_limits<int64_t>::max(), MirrorFileFromRow);
}

Result<int64_t> SqlStore::MirrorBytes() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT COALESCE(SUM(size), 0) FROM mirror_blobs"));
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Result<std::vector<MirrorBlobRow>> SqlStore::ListMirrorBlobsByUse(int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kMirrorBlobColumns +
                                             " FROM mirror_blobs ORDER BY last_used_ms, sha256 "
                                             "LIMIT ?"));
  s->Bind(static_cast<int64_t>(limit));
  return CollectRows(*s, limit, MirrorBlobFromRow);
}

Result<std::optional<std::string>> SqlStore::GetMirrorMetadata(const std::string& sha256) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT metadata FROM mirror_blobs "
                                             "WHERE sha256 = ? AND metadata_sha256 != ''"));
  s->Bind(sha256);
  return ReadOptionalRow(*s, [](const Stmt& row) { return row.Text(0); });
}

Result<bool> SqlStore::ForgetMirrorBlob(const std::string& sha256) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto elsewhere, db_->Prepare(kNamedElsewhere));
  elsewhere->Bind(sha256);
  FARM_ASSIGN_OR_RETURN(bool row, elsewhere->Step());
  const bool named = row && elsewhere->Int(0) != 0;
  for (const char* sql :
       {"DELETE FROM mirror_files WHERE sha256 = ?", "DELETE FROM mirror_blobs WHERE sha256 = ?"}) {
    FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(sql));
    s->Bind(sha256);
    FARM_RETURN_IF_ERROR(s->Run());
  }
  if (db_->Changes() == 0) return Status::NotFound("the mirror holds no blob " + sha256);
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return named;
}

}  // namespace farm::store
