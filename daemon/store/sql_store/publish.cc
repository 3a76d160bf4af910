// The publication outbox (migration 003): rows the publisher loop works, and the record
// of which artifacts it has already decided on.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

namespace {

constexpr char kPublicationColumns[] =
    "id, build_id, artifact_id, target, kind, repo, ref, path, label, filename, sha256, size, "
    "state, attempts, not_before_ms, error, remote_id, remote_url, replace_remote, created_ms, "
    "updated_ms";

PublicationRow PublicationFromRow(const Stmt& s) {
  PublicationRow p;
  p.id = s.Int(0);
  p.build_id = s.Int(1);
  p.artifact_id = s.Int(2);
  p.target = s.Text(3);
  p.kind = s.Text(4);
  p.repo = s.Text(5);
  p.ref = s.Text(6);
  p.path = s.Text(7);
  p.label = s.Text(8);
  p.filename = s.Text(9);
  p.sha256 = s.Text(10);
  p.size = s.Int(11);
  p.state = ParsePublicationState(s.Text(12)).value_or(PublicationState::kFailed);
  p.attempts = static_cast<int>(s.Int(13));
  p.not_before_ms = s.Int(14);
  p.error = s.Text(15);
  p.remote_id = s.Text(16);
  p.remote_url = s.Text(17);
  p.replace_remote = s.Int(18) != 0;
  p.created_ms = s.Int(19);
  p.updated_ms = s.Int(20);
  return p;
}

}  // namespace

Result<std::vector<PublishCandidate>> SqlStore::ListPublishCandidates(int64_t after_id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("SELECT a.id, a.job_id, a.attempt, a.filename, a.sha256, a.size, a.manifest, "
                   "a.validation, a.created_ms, j.build_id, j.cell FROM artifacts a "
                   "JOIN jobs j ON j.id = a.job_id WHERE a.id > ? AND j.state = 3 "
                   "AND (a.attempt = j.attempt OR a.attempt = 0) "
                   "AND NOT EXISTS (SELECT 1 FROM publish_scanned s WHERE s.artifact_id = a.id) "
                   "ORDER BY a.id LIMIT ?"));
  s->Bind(after_id).Bind(limit);
  return CollectRows(*s, limit, [](const Stmt& r) {
    PublishCandidate c;
    c.artifact = ArtifactRow{r.Int(0),  r.Int(1),  static_cast<int>(r.Int(2)),
                             r.Text(3), r.Text(4), r.Int(5),
                             r.Text(6), r.Text(7), r.Int(8)};
    c.build_id = r.Int(9);
    c.cell = r.Text(10);
    return c;
  });
}

Status SqlStore::EnqueuePublications(int64_t artifact_id, const std::string& outcome,
                                     const std::vector<PublicationRow>& rows, int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  for (const PublicationRow& p : rows) {
    FARM_ASSIGN_OR_RETURN(
        auto s,
        db_->Prepare(
            "INSERT INTO publications(build_id, artifact_id, target, kind, repo, ref, path, label, "
            "state, error, replace_remote, created_ms, updated_ms) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(build_id, artifact_id, target) DO NOTHING"));
    s->Bind(p.build_id)
        .Bind(p.artifact_id)
        .Bind(p.target)
        .Bind(p.kind)
        .Bind(p.repo)
        .Bind(p.ref)
        .Bind(p.path)
        .Bind(p.label)
        .Bind(std::string(PublicationStateName(p.state)))
        .Bind(p.error)
        .Bind(p.replace_remote ? 1 : 0)
        .Bind(now_ms)
        .Bind(now_ms);
    FARM_RETURN_IF_ERROR(s->Run());
  }
  if (artifact_id > 0) {
    FARM_ASSIGN_OR_RETURN(auto s,
                          db_->Prepare("INSERT OR REPLACE INTO publish_scanned(artifact_id, "
                                       "outcome, scanned_ms) VALUES (?,?,?)"));
    s->Bind(artifact_id).Bind(outcome).Bind(now_ms);
    FARM_RETURN_IF_ERROR(s->Run());
  }
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return Status::Ok();
}

Result<std::vector<PublicationRow>> SqlStore::ListPublications(int64_t build_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kPublicationColumns +
                                             " FROM publications WHERE build_id = ? ORDER BY id"));
  s->Bind(build_id);
  return CollectRows(*s, 100000, PublicationFromRow);
}

Result<std::map<int64_t, std::vector<PublicationRow>>> SqlStore::ListPublicationsOfBuilds(
    const std::vector<int64_t>& build_ids) {
  Locked lock(this);
  return SelectByIds<PublicationRow>(
      *db_, std::string("SELECT ") + kPublicationColumns + " FROM publications WHERE build_id IN",
      "build_id, id", build_ids, PublicationFromRow, &PublicationRow::build_id);
}

Result<std::vector<PublicationRow>> SqlStore::ListRecentPublications(int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          std::string("SELECT ") + kPublicationColumns +
          " FROM publications ORDER BY state = 'failed' DESC, updated_ms DESC, id DESC LIMIT ?"));
  s->Bind(limit);
  return CollectRows(*s, limit, PublicationFromRow);
}

Result<std::vector<PublicationRow>> SqlStore::ListHubFilesUnder(const std::string& repo,
                                                                const std::string& ref,
                                                                const std::string& dir) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          std::string("SELECT ") + kPublicationColumns +
          " FROM publications WHERE target = 'hf' AND kind = 'file' AND repo = ? AND ref = ?"
          " AND state IN ('uploaded', 'published') AND substr(path, 1, ?) = ?"
          " ORDER BY path, id LIMIT 100000"));
  s->Bind(repo).Bind(ref).Bind(static_cast<int64_t>(dir.size())).Bind(dir);
  return CollectRows(*s, 100000, PublicationFromRow);
}

Result<std::vector<PublicationRow>> SqlStore::ListDuePublications(int64_t now_ms, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kPublicationColumns +
                                             " FROM publications WHERE state = 'uploading' OR "
                                             "(state = 'pending' AND not_before_ms <= ?)"
                                             " ORDER BY id LIMIT ?"));
  s->Bind(now_ms).Bind(limit);
  return CollectRows(*s, limit, PublicationFromRow);
}

Status SqlStore::UpdatePublication(const PublicationRow& p, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("UPDATE publications SET state = ?, attempts = ?, not_before_ms = ?, error = ?, "
                   "remote_id = ?, remote_url = ?, path = ?, updated_ms = ? WHERE id = ?"));
  s->Bind(std::string(PublicationStateName(p.state)))
      .Bind(p.attempts)
      .Bind(p.not_before_ms)
      .Bind(p.error)
      .Bind(p.remote_id)
      .Bind(p.remote_url)
      .Bind(p.path)
      .Bind(now_ms)
      .Bind(p.id);
  return RunWriteOfOne(*s, "no publication " + std::to_string(p.id));
}

Status SqlStore::SetPublicationFile(int64_t artifact_id, const std::string& label,
                                    const std::string& filename, const std::string& sha256,
                                    int64_t size, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE publications SET label = ?, filename = ?, sha256 = ?, size = ?, updated_ms = ? "
          "WHERE artifact_id = ? AND artifact_id > 0 AND sha256 = ''"));
  s->Bind(label).Bind(filename).Bind(sha256).Bind(size).Bind(now_ms).Bind(artifact_id);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  return Status::Ok();
}

Status SqlStore::MarkReleasePublished(int64_t build_id, const std::string& remote_id,
                                      const std::string& remote_url, int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(
      auto release,
      db_->Prepare(
          "UPDATE publications SET state = 'published', error = '', remote_id = ?, remote_url = ?, "
          "updated_ms = ? WHERE build_id = ? AND target = 'github' AND kind = 'release'"));
  release->Bind(remote_id).Bind(remote_url).Bind(now_ms).Bind(build_id);
  FARM_RETURN_IF_ERROR(release->Run());
  FARM_ASSIGN_OR_RETURN(
      auto assets,
      db_->Prepare(
          "UPDATE publications SET state = 'published', updated_ms = ? WHERE build_id = ? AND "
          "target = 'github' AND kind = 'asset' AND state = 'uploaded'"));
  assets->Bind(now_ms).Bind(build_id);
  FARM_RETURN_IF_ERROR(assets->Run());
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return Status::Ok();
}

Result<int> SqlStore::RequeuePublications(int64_t build_id, const std::string& target, bool replace,
                                          int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE publications SET state = 'pending', attempts = 0, not_before_ms = 0, error = '', "
          "replace_remote = ?, updated_ms = ? WHERE build_id = ? AND (? = '' OR target = ?)"));
  s->Bind(replace ? 1 : 0).Bind(now_ms).Bind(build_id).Bind(target).Bind(target);
  FARM_RETURN_IF_ERROR(s->Run());
  int changed = db_->Changes();
  Bump();
  return changed;
}

Result<std::map<std::string, int64_t>> SqlStore::CountPublicationsByState() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("SELECT state, COUNT(*) FROM publications GROUP BY state"));
  std::map<std::string, int64_t> out;
  FARM_RETURN_IF_ERROR(ForEachRow(*s, 64, [&](const Stmt& r) { out[r.Text(0)] = r.Int(1); }));
  return out;
}

}  // namespace farm::store
