// Source archives clients uploaded (migration 012): which blobs are checked sources and
// when they were last used, and the collection of those nothing needs any more. Each call
// is one statement under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kSourceColumns[] =
    "sha256, size, files, origin, uploaded_by, created_ms, last_used_ms";

SourceArchiveRow SourceFromRow(const Stmt& s) {
  return ReadMembers<SourceArchiveRow>(
      s, &SourceArchiveRow::sha256, &SourceArchiveRow::size, &SourceArchiveRow::files,
      &SourceArchiveRow::origin, &SourceArchiveRow::uploaded_by, &SourceArchiveRow::created_ms,
      &SourceArchiveRow::last_used_ms);
}

// An archive nothing needs: unused since before ?1 (bound by the caller), named by no
// schedule that is not deleted, no queued or running build, and no stored wheel,
// published file, preloaded upstream file or file the pull-through cache holds (the blob
// store is shared, and content addressing could make a wheel and a source the same blob).
constexpr char kCollectable[] =
    "s.last_used_ms < ?1"
    " AND NOT EXISTS (SELECT 1 FROM schedules c WHERE c.source_sha256 = s.sha256"
    "                 AND c.deleted_ms = 0)"
    " AND NOT EXISTS (SELECT 1 FROM builds b WHERE b.source_sha256 = s.sha256"
    "                 AND b.state IN (1, 2))"
    " AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = s.sha256)"
    " AND NOT EXISTS (SELECT 1 FROM publications p WHERE p.sha256 = s.sha256)"
    " AND NOT EXISTS (SELECT 1 FROM upstream_preloads u WHERE u.sha256 = s.sha256)"
    " AND NOT EXISTS (SELECT 1 FROM mirror_blobs m WHERE m.sha256 = s.sha256)";

}  // namespace

Status SqlStore::RecordSourceArchive(const SourceArchiveRow& r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("INSERT INTO source_archives(sha256, size, files, origin, "
                           "uploaded_by, created_ms, last_used_ms) VALUES (?,?,?,?,?,?,?) "
                           "ON CONFLICT(sha256) DO UPDATE SET last_used_ms = "
                           "MAX(source_archives.last_used_ms, excluded.last_used_ms)"));
  s->Bind(r.sha256)
      .Bind(r.size)
      .Bind(r.files)
      .Bind(r.origin)
      .Bind(r.uploaded_by)
      .Bind(r.created_ms)
      .Bind(r.last_used_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  return Status::Ok();
}

Result<SourceArchiveRow> SqlStore::GetSourceArchive(const std::string& sha256) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kSourceColumns +
                                             " FROM source_archives WHERE sha256 = ?"));
  s->Bind(sha256);
  return ReadOneRow(*s, SourceFromRow, "no source archive " + sha256);
}

Status SqlStore::TouchSourceArchive(const std::string& sha256, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE source_archives SET last_used_ms = MAX(last_used_ms, ?) "
                           "WHERE sha256 = ?"));
  s->Bind(now_ms).Bind(sha256);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no source archive " + sha256);
  return Status::Ok();
}

Result<std::vector<SourceArchiveRow>> SqlStore::ListCollectableSources(int64_t unused_before_ms,
                                                                       int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kSourceColumns +
                                             " FROM source_archives s WHERE " + kCollectable +
                                             " ORDER BY s.last_used_ms LIMIT ?2"));
  s->Bind(unused_before_ms).Bind(static_cast<int64_t>(limit));
  return CollectRows(*s, limit, SourceFromRow);
}

Result<bool> SqlStore::ForgetSourceArchive(const std::string& sha256, int64_t unused_before_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("DELETE FROM source_archives AS s "
                                                         "WHERE s.sha256 = ?2 AND ") +
                                             kCollectable));
  s->Bind(unused_before_ms).Bind(sha256);
  return RunWrite(*s);
}

}  // namespace farm::store
