// Tokens, workers, builds, logs and artifacts. Job state transitions are in
// sql_store/jobs.cc.
#include "daemon/store/sql_store/sql_store.h"

#include <algorithm>
#include <cstdint>

#include "common/fs.h"

namespace farm::store {

const char kJobColumns[] =
    "id, build_id, cell, state, priority, attempt, worker_id, lease_expiry_ms, "
    "cancel_requested, not_before_ms, error, build_key, created_ms, started_ms, finished_ms, "
    "reused_from, max_attempts, cancelled_by, kind, target_job_id, target_attempt, needs, "
    "compile_mib, validation_mib, held, key_base";

JobRow JobFromRow(const Stmt& s) {
  JobRow j;
  j.id = s.Int(0);
  j.build_id = s.Int(1);
  j.cell = s.Text(2);
  j.state = static_cast<JobState>(s.Int(3));
  j.priority = static_cast<int>(s.Int(4));
  j.attempt = static_cast<int>(s.Int(5));
  j.worker_id = s.Text(6);
  j.lease_expiry_ms = s.Int(7);
  j.cancel_requested = s.Int(8) != 0;
  j.not_before_ms = s.Int(9);
  j.error = s.Text(10);
  j.build_key = s.Text(11);
  j.created_ms = s.Int(12);
  j.started_ms = s.Int(13);
  j.finished_ms = s.Int(14);
  j.reused_from = s.Int(15);
  j.max_attempts = static_cast<int>(s.Int(16));
  j.cancelled_by = s.Text(17);
  j.kind = static_cast<int>(s.Int(18));
  j.target_job_id = s.Int(19);
  j.target_attempt = static_cast<int>(s.Int(20));
  j.needs = s.Text(21);
  j.compile_mib = s.Int(22);
  j.validation_mib = s.Int(23);
  j.held = static_cast<int>(s.Int(24));
  j.key_base = s.Text(25);
  return j;
}

namespace {

constexpr char kBuildColumns[] =
    "id, recipe_name, recipe, state, priority, submitted_by, rejected_cells, created_ms, "
    "finished_ms, source_sha256";

BuildRow BuildFromRow(const Stmt& s) {
  BuildRow b;
  b.id = s.Int(0);
  b.recipe_name = s.Text(1);
  b.recipe = s.Text(2);
  b.state = static_cast<BuildState>(s.Int(3));
  b.priority = static_cast<int>(s.Int(4));
  b.submitted_by = s.Text(5);
  b.rejected_cells = s.Text(6);
  b.created_ms = s.Int(7);
  b.finished_ms = s.Int(8);
  b.source_sha256 = s.Text(9);
  return b;
}

constexpr char kWorkerColumns[] =
    "id, name, capabilities, state, registered_ms, last_heartbeat_ms, drain_requested";

WorkerRow WorkerFromRow(const Stmt& s) {
  // A name this farmd does not know (written by a newer one) reads as lost: never placed.
  WorkerState state = ParseWorkerState(s.Text(3)).value_or(WorkerState::kLost);
  return WorkerRow{s.Text(0), s.Text(1), s.Text(2), state, s.Int(4), s.Int(5), s.Int(6) != 0};
}

constexpr char kArtifactColumns[] =
    "id, job_id, attempt, filename, sha256, size, manifest, validation, created_ms, "
    "validation_state";

ArtifactRow ArtifactFromRow(const Stmt& s) {
  ArtifactRow a;
  a.id = s.Int(0);
  a.job_id = s.Int(1);
  a.attempt = static_cast<int>(s.Int(2));
  a.filename = s.Text(3);
  a.sha256 = s.Text(4);
  a.size = s.Int(5);
  a.manifest = s.Text(6);
  a.validation = s.Text(7);
  a.created_ms = s.Int(8);
  a.validation_state = static_cast<int>(s.Int(9));
  return a;
}

}  // namespace

ArtifactRow ArtifactFromStmt(const Stmt& s) { return ArtifactFromRow(s); }
const char* ArtifactColumns() { return kArtifactColumns; }

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(auto db, Db::Open(path));
  FARM_RETURN_IF_ERROR(db->Migrate());
  return std::unique_ptr<Store>(new SqlStore(std::move(db)));
}

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

namespace {

constexpr char kTokenColumns[] = "hash, name, role, worker_id, created_ms, expires_ms, revoked_ms";

TokenRow TokenFromRow(const Stmt& s) {
  return TokenRow{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4), s.Int(5), s.Int(6)};
}

}  // namespace

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

Status SqlStore::UpsertWorker(const WorkerRow& w) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO workers(id, name, capabilities, state, registered_ms, last_heartbeat_ms) "
          "VALUES (?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET name=excluded.name, "
          "capabilities=excluded.capabilities, state=excluded.state, "
          "last_heartbeat_ms=excluded.last_heartbeat_ms"));
  s->Bind(w.id)
      .Bind(w.name)
      .BindBlob(w.capabilities)
      .Bind(std::string(WorkerStateName(w.state)))
      .Bind(w.registered_ms)
      .Bind(w.last_heartbeat_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  BumpQueue();
  return Status::Ok();
}

Result<WorkerRow> SqlStore::GetWorker(const std::string& id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kWorkerColumns + " FROM workers WHERE id = ?"));
  s->Bind(id);
  return ReadOneRow(*s, WorkerFromRow, "no worker " + id);
}

Result<std::vector<WorkerRow>> SqlStore::ListWorkers() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kWorkerColumns +
                                             " FROM workers ORDER BY name, id"));
  return CollectRows(*s, 100000, WorkerFromRow);
}

Status SqlStore::TouchWorker(const std::string& id, int64_t now_ms, WorkerState state) {
  Locked lock(this);
  // Only a change into or out of a state placement skips (idle to lost, say) changes
  // placement; a heartbeat or a flip between idle and busy does not.
  bool state_changes = false, placement_changes = false;
  {
    FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare("SELECT state FROM workers WHERE id = ?"));
    q->Bind(id);
    FARM_ASSIGN_OR_RETURN(bool found, q->Step());
    std::optional<WorkerState> was = found ? ParseWorkerState(q->Text(0)) : std::nullopt;
    state_changes = found && was != state;
    placement_changes = state_changes && (!was || IsAway(*was) || IsAway(state));
  }
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE workers SET last_heartbeat_ms = ?, state = ? WHERE id = ?"));
  s->Bind(now_ms).Bind(std::string(WorkerStateName(state))).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no worker " + id);
  if (placement_changes) {
    BumpQueue();
  } else if (state_changes) {
    Bump();
  }
  return Status::Ok();
}

Status SqlStore::SetDrainRequested(const std::string& id, bool drain) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("UPDATE workers SET drain_requested = ? WHERE id = ?"));
  s->Bind(drain ? 1 : 0).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no worker " + id);
  BumpQueue();
  return Status::Ok();
}

Result<int> SqlStore::CountRunningJobs(const std::string& worker_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT COUNT(*) FROM jobs WHERE worker_id = ? AND state = 2"));
  s->Bind(worker_id);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? static_cast<int>(s->Int(0)) : 0;
}

Status SqlStore::InsertBuildRow(BuildRow* build) {
  FARM_ASSIGN_OR_RETURN(
      auto b,
      db_->Prepare(
          "INSERT INTO builds(recipe_name, recipe, state, priority, submitted_by, rejected_cells, "
          "created_ms, source_sha256) VALUES (?,?,?,?,?,?,?,?)"));
  b->Bind(build->recipe_name)
      .BindBlob(build->recipe)
      .Bind(build->state)
      .Bind(build->priority)
      .Bind(build->submitted_by)
      .Bind(build->rejected_cells)
      .Bind(build->created_ms)
      .Bind(build->source_sha256);
  FARM_RETURN_IF_ERROR(b->Run());
  build->id = db_->LastInsertId();
  return Status::Ok();
}

Result<std::vector<JobRow>> SqlStore::ListRunningJobs(const std::string& worker_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kJobColumns +
                                             " FROM jobs WHERE worker_id = ? AND state = 2 "
                                             "ORDER BY id LIMIT 1000"));
  s->Bind(worker_id);
  return CollectRows(*s, 1000, JobFromRow);
}

Status SqlStore::CreateBuild(BuildRow* build, std::vector<JobRow>* jobs) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_RETURN_IF_ERROR(InsertBuildRow(build));
  for (JobRow& job : *jobs) {
    job.build_id = build->id;
    FARM_RETURN_IF_ERROR(InsertJob(&job));
  }
  FARM_RETURN_IF_ERROR(RefreshBuildState(build->id, build->created_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  BumpQueue();
  return Status::Ok();
}

Result<BuildRow> SqlStore::GetBuild(int64_t id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kBuildColumns + " FROM builds WHERE id = ?"));
  s->Bind(id);
  return ReadOneRow(*s, BuildFromRow, "no build " + std::to_string(id));
}

Result<std::vector<BuildRow>> SqlStore::ListBuilds(int64_t before_id, int limit) {
  return ListBuildsMatching(BuildFilter{}, before_id, limit);
}

Result<std::vector<BuildRow>> SqlStore::ListBuildsMatching(const BuildFilter& filter,
                                                           int64_t before_id, int limit) {
  std::string where = "id < ?";
  if (!filter.recipe_name.empty()) where += " AND recipe_name = ?";
  if (!filter.submitted_by.empty()) where += " AND submitted_by = ?";
  if (filter.state != 0) where += " AND state = ?";
  if (filter.any_worker) {
    // Attempts name every worker a build's jobs ran on, not only the last one.
    std::string marks;
    for (size_t i = 0; i < filter.worker_ids.size(); ++i) marks += i ? ",?" : "?";
    where +=
        " AND id IN (SELECT j.build_id FROM attempts a JOIN jobs j ON j.id = a.job_id "
        "WHERE a.worker_id IN (" +
        (marks.empty() ? std::string("NULL") : marks) + "))";
  }
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kBuildColumns + " FROM builds WHERE " + where +
                           " ORDER BY id DESC LIMIT ?"));
  s->Bind(before_id > 0 ? before_id : INT64_MAX);
  if (!filter.recipe_name.empty()) s->Bind(filter.recipe_name);
  if (!filter.submitted_by.empty()) s->Bind(filter.submitted_by);
  if (filter.state != 0) s->Bind(filter.state);
  if (filter.any_worker) {
    for (const auto& w : filter.worker_ids) s->Bind(w);
  }
  s->Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, BuildFromRow);
}

Result<std::vector<JobRow>> SqlStore::QueryJobs(const std::string& where, int64_t arg, int limit) {
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kJobColumns +
                                             " FROM jobs WHERE " + where + " LIMIT ?"));
  s->Bind(arg).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, JobFromRow);
}

Result<std::vector<JobRow>> SqlStore::ListJobs(int64_t build_id) {
  Locked lock(this);
  return QueryJobs("build_id = ? ORDER BY id", build_id, 100000);
}

Result<JobRow> SqlStore::GetJobLocked(int64_t id) {
  FARM_ASSIGN_OR_RETURN(auto rows, QueryJobs("id = ?", id, 1));
  if (rows.empty()) return Status::NotFound("no job " + std::to_string(id));
  return rows.front();
}

Status SqlStore::InsertJob(JobRow* job) {
  bool reused = job->reused_from > 0;
  if (reused) job->state = kJobSucceeded, job->finished_ms = job->created_ms;
  FARM_ASSIGN_OR_RETURN(
      auto j,
      db_->Prepare(
          "INSERT INTO jobs(build_id, cell, state, priority, build_key, reused_from, created_ms, "
          "finished_ms, max_attempts, kind, target_job_id, target_attempt, needs, compile_mib, "
          "validation_mib, held, key_base, not_before_ms, error) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  j->Bind(job->build_id)
      .BindBlob(job->cell)
      .Bind(job->state)
      .Bind(job->priority)
      .Bind(job->build_key)
      .Bind(job->reused_from)
      .Bind(job->created_ms)
      .Bind(job->finished_ms)
      .Bind(job->max_attempts)
      .Bind(job->kind)
      .Bind(job->target_job_id)
      .Bind(job->target_attempt)
      .BindBlob(job->needs)
      .Bind(job->compile_mib)
      .Bind(job->validation_mib)
      .Bind(job->held)
      .Bind(job->key_base)
      .Bind(job->not_before_ms)
      .Bind(job->error);
  FARM_RETURN_IF_ERROR(j->Run());
  job->id = db_->LastInsertId();
  if (!reused) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(
      auto copy,
      db_->Prepare(
          "INSERT INTO artifacts(job_id, attempt, filename, sha256, size, manifest, validation, "
          "created_ms, validation_state) SELECT ?, 0, filename, sha256, size, manifest, "
          "validation, "
          "created_ms, validation_state FROM artifacts WHERE job_id = ?"));
  copy->Bind(job->id).Bind(job->reused_from);
  return copy->Run();
}

Result<std::optional<JobRow>> SqlStore::FindSucceededJob(const std::string& build_key) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(
                  std::string("SELECT ") + kJobColumns +
                  " FROM jobs WHERE build_key = ? AND build_key != '' AND state = 3 AND EXISTS "
                  "(SELECT 1 FROM artifacts a WHERE a.job_id = jobs.id) ORDER BY id DESC LIMIT 1"));
  s->Bind(build_key);
  return ReadOptionalRow(*s, JobFromRow);
}

Result<JobRow> SqlStore::GetJob(int64_t id) {
  Locked lock(this);
  return GetJobLocked(id);
}

Result<std::vector<JobRow>> SqlStore::ListPendingJobs(int limit) {
  Locked lock(this);
  return QueryJobs("state = ? ORDER BY priority DESC, id ASC", kJobPending, limit);
}

namespace {

constexpr char kAttemptSelect[] =
    "SELECT job_id, number, worker_id, cause, detail, exit_code, peak_rss_bytes, log_acked_seq, "
    "started_ms, finished_ms, cache_hits, cache_misses, units_done, units_total FROM attempts "
    "WHERE job_id";

AttemptRow AttemptFromRow(const Stmt& s) {
  return AttemptRow{s.Int(0),  static_cast<int>(s.Int(1)),
                    s.Text(2), static_cast<int>(s.Int(3)),
                    s.Text(4), static_cast<int>(s.Int(5)),
                    s.Int(6),  s.Int(7),
                    s.Int(8),  s.Int(9),
                    s.Int(10), s.Int(11),
                    s.Int(12), s.Int(13)};
}

}  // namespace

Result<std::vector<AttemptRow>> SqlStore::ListAttempts(int64_t job_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string(kAttemptSelect) + " = ? ORDER BY number"));
  s->Bind(job_id);
  return CollectRows(*s, 10000, AttemptFromRow);
}

Result<std::map<int64_t, std::vector<AttemptRow>>> SqlStore::ListAttemptsOfJobs(
    const std::vector<int64_t>& job_ids) {
  Locked lock(this);
  return SelectByIds<AttemptRow>(*db_, std::string(kAttemptSelect) + " IN", "job_id, number",
                                 job_ids, AttemptFromRow, &AttemptRow::job_id);
}

Result<std::map<int64_t, std::vector<ArtifactRow>>> SqlStore::ListArtifactsOfJobs(
    const std::vector<int64_t>& job_ids) {
  Locked lock(this);
  return SelectByIds<ArtifactRow>(
      *db_, std::string("SELECT ") + kArtifactColumns + " FROM artifacts WHERE job_id IN",
      "job_id, id", job_ids, ArtifactFromRow, &ArtifactRow::job_id);
}

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
