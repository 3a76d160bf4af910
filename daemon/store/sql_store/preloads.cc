// Files preloaded into farmd's pull-through cache (migration 025): which name of which
// upstream index or tree is which blob. Each call runs under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kPreloadColumns[] = "source, path, kind, sha256, size, added_by, created_ms";

UpstreamPreloadRow PreloadFromRow(const Stmt& s) {
  return ReadMembers<UpstreamPreloadRow>(s, &UpstreamPreloadRow::source, &UpstreamPreloadRow::path,
                                         &UpstreamPreloadRow::kind, &UpstreamPreloadRow::sha256,
                                         &UpstreamPreloadRow::size, &UpstreamPreloadRow::added_by,
                                         &UpstreamPreloadRow::created_ms);
}

}  // namespace

Result<bool> SqlStore::RecordUpstreamPreload(const UpstreamPreloadRow& r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto insert,
                        db_->Prepare(std::string("INSERT OR IGNORE INTO upstream_preloads(") +
                                     kPreloadColumns + ") VALUES (?,?,?,?,?,?,?)"));
  insert->Bind(r.source)
      .Bind(r.path)
      .Bind(r.kind)
      .Bind(r.sha256)
      .Bind(r.size)
      .Bind(r.added_by)
      .Bind(r.created_ms);
  FARM_ASSIGN_OR_RETURN(bool stored, RunWrite(*insert));
  if (stored) return true;
  FARM_ASSIGN_OR_RETURN(
      auto held,
      db_->Prepare("SELECT sha256 FROM upstream_preloads WHERE source = ? AND path = ?"));
  held->Bind(r.source).Bind(r.path);
  FARM_ASSIGN_OR_RETURN(bool found, held->Step());
  if (found && held->Text(0) == r.sha256) return false;
  return Status::AlreadyExists(r.source + "/" + r.path +
                               " is preloaded with other content (sha256 " +
                               (found ? held->Text(0) : std::string("?")) + ")");
}

Result<std::optional<UpstreamPreloadRow>> SqlStore::GetUpstreamPreload(const std::string& source,
                                                                       const std::string& path) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare(std::string("SELECT ") + kPreloadColumns +
                                     " FROM upstream_preloads WHERE source = ? AND path = ?"));
  s->Bind(source).Bind(path);
  return ReadOptionalRow(*s, PreloadFromRow);
}

Result<std::vector<UpstreamPreloadRow>> SqlStore::ListUpstreamPreloads() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kPreloadColumns +
                                             " FROM upstream_preloads ORDER BY source, path"));
  return CollectRows(*s, std::numeric_limits<int64_t>::max(), PreloadFromRow);
}

}  // namespace farm::store
