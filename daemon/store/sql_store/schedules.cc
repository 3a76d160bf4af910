// Schedules, their runs, and jobs merged onto an identical job in flight.
#include <algorithm>
#include <limits>

#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

namespace {

constexpr char kScheduleColumns[] =
    "id, name, recipe_name, request, cron, time_zone, missed_policy, concurrency_policy, "
    "paused, next_fire_ms, created_by, created_ms, deleted_ms, source_sha256, watch, watch_state";

ScheduleRow ScheduleFromRow(const Stmt& s) {
  ScheduleRow r;
  r.id = s.Int(0);
  r.name = s.Text(1);
  r.recipe_name = s.Text(2);
  r.request = s.Text(3);
  r.cron = s.Text(4);
  r.time_zone = s.Text(5);
  r.missed_policy = static_cast<int>(s.Int(6));
  r.concurrency_policy = static_cast<int>(s.Int(7));
  r.paused = s.Int(8) != 0;
  r.next_fire_ms = s.Int(9);
  r.created_by = s.Text(10);
  r.created_ms = s.Int(11);
  r.deleted_ms = s.Int(12);
  r.source_sha256 = s.Text(13);
  r.watch = s.Text(14);
  r.watch_state = s.Text(15);
  return r;
}

constexpr char kRunColumns[] =
    "r.id, r.schedule_id, r.trigger, r.outcome, r.fire_ms, r.created_ms, r.build_id, "
    "COALESCE(b.state, 0), r.resolved_commit, r.inputs_digest, r.detail, r.upstream_ms";
constexpr char kRunFrom[] = " FROM schedule_runs r LEFT JOIN builds b ON b.id = r.build_id ";

ScheduleRunRow RunFromRow(const Stmt& s) {
  ScheduleRunRow r;
  r.id = s.Int(0);
  r.schedule_id = s.Int(1);
  r.trigger = static_cast<int>(s.Int(2));
  r.outcome = static_cast<int>(s.Int(3));
  r.fire_ms = s.Int(4);
  r.created_ms = s.Int(5);
  r.build_id = s.Int(6);
  r.build_state = static_cast<int>(s.Int(7));
  r.resolved_commit = s.Text(8);
  r.inputs_digest = s.Text(9);
  r.detail = s.Text(10);
  r.upstream_ms = s.Int(11);
  return r;
}

}  // namespace

// --- schedules ------------------------------------------------------------------------------

Status SqlStore::InsertSchedule(ScheduleRow* r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO schedules(name, recipe_name, request, cron, time_zone, missed_policy, "
          "concurrency_policy, paused, next_fire_ms, created_by, created_ms, source_sha256, "
          "watch, watch_state) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  s->Bind(r->name)
      .Bind(r->recipe_name)
      .BindBlob(r->request)
      .Bind(r->cron)
      .Bind(r->time_zone)
      .Bind(r->missed_policy)
      .Bind(r->concurrency_policy)
      .Bind(r->paused ? 1 : 0)
      .Bind(r->next_fire_ms)
      .Bind(r->created_by)
      .Bind(r->created_ms)
      .Bind(r->source_sha256)
      .BindBlob(r->watch)
      .Bind(r->watch_state);
  FARM_RETURN_IF_ERROR(s->Run());
  r->id = db_->LastInsertId();
  Bump();
  return Status::Ok();
}

Result<ScheduleRow> SqlStore::GetSchedule(int64_t id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kScheduleColumns +
                                             " FROM schedules WHERE id = ? AND deleted_ms = 0"));
  s->Bind(id);
  return ReadOneRow(*s, ScheduleFromRow, "no schedule " + std::to_string(id));
}

Result<std::vector<ScheduleRow>> SqlStore::ListSchedules() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kScheduleColumns +
                                             " FROM schedules WHERE deleted_ms = 0 ORDER BY id"));
  return CollectRows(*s, 100000, ScheduleFromRow);
}

Status SqlStore::SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE schedules SET paused = ?, next_fire_ms = ? WHERE id = ? AND deleted_ms = 0"));
  s->Bind(paused ? 1 : 0).Bind(next_fire_ms).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no schedule " + std::to_string(id));
  Bump();
  return Status::Ok();
}

Status SqlStore::SetScheduleRequest(int64_t id, const std::string& request,
                                    const std::string& source_sha256) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("UPDATE schedules SET request = ?, source_sha256 = ? "
                                             "WHERE id = ? AND deleted_ms = 0"));
  s->BindBlob(request).Bind(source_sha256).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no schedule " + std::to_string(id));
  Bump();
  return Status::Ok();
}

Status SqlStore::DeleteSchedule(int64_t id, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE schedules SET deleted_ms = ? WHERE id = ? AND deleted_ms = 0"));
  s->Bind(now_ms > 0 ? now_ms : 1).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no schedule " + std::to_string(id));
  Bump();
  return Status::Ok();
}

Status SqlStore::InsertScheduleRunLocked(ScheduleRunRow* run, int64_t next_fire_ms) {
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "INSERT INTO schedule_runs(schedule_id, trigger, outcome, fire_ms, created_ms, build_id, "
          "resolved_commit, inputs_digest, detail, upstream_ms) VALUES (?,?,?,?,?,?,?,?,?,?)"));
  s->Bind(run->schedule_id)
      .Bind(run->trigger)
      .Bind(run->outcome)
      .Bind(run->fire_ms)
      .Bind(run->created_ms)
      .Bind(run->build_id)
      .Bind(run->resolved_commit)
      .Bind(run->inputs_digest)
      .Bind(run->detail)
      .Bind(run->upstream_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  run->id = db_->LastInsertId();
  if (!run->watch_state.empty()) {
    FARM_ASSIGN_OR_RETURN(auto w,
                          db_->Prepare("UPDATE schedules SET watch_state = ? WHERE id = ?"));
    w->Bind(run->watch_state).Bind(run->schedule_id);
    FARM_RETURN_IF_ERROR(w->Run());
  }
  if (next_fire_ms < 0) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto up,
                        db_->Prepare("UPDATE schedules SET next_fire_ms = ? WHERE id = ?"));
  up->Bind(next_fire_ms).Bind(run->schedule_id);
  return up->Run();
}

Status SqlStore::RecordScheduleRun(ScheduleRunRow* run, int64_t next_fire_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_RETURN_IF_ERROR(InsertScheduleRunLocked(run, next_fire_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return Status::Ok();
}

Status SqlStore::SetWatchState(int64_t id, const std::string& state, int64_t next_fire_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE schedules SET watch_state = ?, next_fire_ms = ? WHERE id = ? "
                           "AND deleted_ms = 0"));
  s->Bind(state).Bind(next_fire_ms).Bind(id);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) return Status::NotFound("no schedule " + std::to_string(id));
  Bump();
  return Status::Ok();
}

Result<std::vector<ScheduleRunRow>> SqlStore::ListScheduleRuns(int64_t schedule_id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kRunColumns + kRunFrom +
                                             "WHERE r.schedule_id = ? ORDER BY r.id DESC LIMIT ?"));
  s->Bind(schedule_id).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, RunFromRow);
}

Result<std::optional<ScheduleRunRow>> SqlStore::LastSucceededScheduleRun(int64_t schedule_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kRunColumns + kRunFrom +
                           "WHERE r.schedule_id = ? AND b.state = 3 ORDER BY r.id DESC LIMIT 1"));
  s->Bind(schedule_id);
  return ReadOptionalRow(*s, RunFromRow);
}

Result<int64_t> SqlStore::ActiveScheduleBuild(int64_t schedule_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("SELECT r.build_id FROM schedule_runs r JOIN builds b ON b.id = r.build_id "
                   "WHERE r.schedule_id = ? AND b.state IN (1, 2) ORDER BY r.id DESC LIMIT 1"));
  s->Bind(schedule_id);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Result<int64_t> SqlStore::ScheduleOfBuild(int64_t build_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "SELECT schedule_id FROM schedule_runs WHERE build_id = ? AND build_id > 0 LIMIT 1"));
  s->Bind(build_id);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

Result<std::map<int64_t, std::vector<ScheduleRunRow>>> SqlStore::ListScheduleRunsOfBuilds(
    const std::vector<int64_t>& build_ids) {
  Locked lock(this);
  return SelectByIds<ScheduleRunRow>(
      *db_, std::string("SELECT ") + kRunColumns + kRunFrom + "WHERE r.build_id IN",
      "r.build_id, r.id", build_ids, RunFromRow, &ScheduleRunRow::build_id);
}

// --- builds with links ----------------------------------------------------------------------

Status SqlStore::MergeOntoLeader(JobRow* job, int64_t now_ms) {
  // The leader is the oldest unsettled job with the key that is not itself waiting.
  FARM_ASSIGN_OR_RETURN(
      auto q,
      db_->Prepare(
          "SELECT id FROM jobs WHERE build_key = ? AND state IN (1, 2) AND id != ? AND NOT EXISTS "
          "(SELECT 1 FROM job_merges m WHERE m.job_id = jobs.id) ORDER BY id LIMIT 1"));
  q->Bind(job->build_key).Bind(job->id);
  FARM_ASSIGN_OR_RETURN(bool found, q->Step());
  if (!found) return Status::Ok();
  int64_t leader = q->Int(0);
  FARM_ASSIGN_OR_RETURN(auto up,
                        db_->Prepare("UPDATE jobs SET not_before_ms = ?, error = ? WHERE id = ?"));
  job->not_before_ms = kWaitingNotBefore;
  job->error = "waiting for job " + std::to_string(leader) + ", an identical build in flight";
  up->Bind(job->not_before_ms).Bind(job->error).Bind(job->id);
  FARM_RETURN_IF_ERROR(up->Run());
  FARM_ASSIGN_OR_RETURN(
      auto ins,
      db_->Prepare("INSERT INTO job_merges(job_id, leader_job_id, created_ms) VALUES (?,?,?)"));
  ins->Bind(job->id).Bind(leader).Bind(now_ms);
  return ins->Run();
}

Status SqlStore::CreateBuildLinked(BuildRow* build, std::vector<JobRow>* jobs, BuildLinks* links) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_RETURN_IF_ERROR(InsertBuildRow(build));
  for (JobRow& job : *jobs) {
    job.build_id = build->id;
    FARM_RETURN_IF_ERROR(InsertJob(&job));
    if (links->merge_in_flight && job.reused_from == 0 && !job.build_key.empty()) {
      FARM_RETURN_IF_ERROR(MergeOntoLeader(&job, build->created_ms));
    }
  }
  size_t released = 0;
  if (!links->requirements.empty()) {
    FARM_RETURN_IF_ERROR(HoldOnRequirements(jobs, *links));
    FARM_ASSIGN_OR_RETURN(auto settled,
                          ResolveHeldLocked(build->created_ms, build->id, links->inputs_key));
    released = settled.size();
  }
  FARM_RETURN_IF_ERROR(RefreshBuildState(build->id, build->created_ms));
  if (links->run) {
    links->run->build_id = build->id;
    FARM_RETURN_IF_ERROR(InsertScheduleRunLocked(&*links->run, links->next_fire_ms));
  }
  FARM_RETURN_IF_ERROR(txn.Commit());
  // Jobs that wait (merged, held) or were answered from the store give no idle worker a
  // job: only a leasable one wakes the long polls.
  bool leasable = released > 0 || std::any_of(jobs->begin(), jobs->end(), [](const JobRow& j) {
                    return j.state == kJobPending && j.not_before_ms == 0;
                  });
  if (leasable) {
    BumpQueue();
  } else {
    RefreshQueueHint();
    Bump();
  }
  return Status::Ok();
}

Status SqlStore::SucceedFrom(int64_t job_id, int64_t from_job_id, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(
      auto copy,
      db_->Prepare("INSERT INTO artifacts(job_id, attempt, filename, sha256, size, manifest, "
                   "validation, created_ms, validation_state) SELECT ?, 0, filename, sha256, size, "
                   "manifest, validation, created_ms, validation_state "
                   "FROM artifacts WHERE job_id = ? AND attempt = (SELECT attempt FROM jobs WHERE "
                   "id = ?)"));
  copy->Bind(job_id).Bind(from_job_id).Bind(from_job_id);
  FARM_RETURN_IF_ERROR(copy->Run());
  FARM_ASSIGN_OR_RETURN(auto up,
                        db_->Prepare("UPDATE jobs SET state = 3, reused_from = ?, error = '', "
                                     "not_before_ms = 0, held = 0, finished_ms = ? WHERE id = ?"));
  up->Bind(from_job_id).Bind(now_ms).Bind(job_id);
  return up->Run();
}

Result<std::vector<int64_t>> SqlStore::ResolveMergedJobs(int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  // Waits of jobs that ended otherwise (cancelled with their build) are simply dropped.
  FARM_RETURN_IF_ERROR(
      db_->Exec("DELETE FROM job_merges WHERE job_id IN (SELECT id FROM jobs WHERE state != 1)"));
  FARM_ASSIGN_OR_RETURN(
      auto q,
      db_->Prepare("SELECT f.id, f.build_id, l.id, l.state, EXISTS (SELECT 1 FROM artifacts a "
                   "WHERE a.job_id = l.id) FROM job_merges m JOIN jobs f ON f.id = m.job_id "
                   "JOIN jobs l ON l.id = m.leader_job_id WHERE l.state IN (3, 4, 5) LIMIT 500"));
  struct Settle {
    int64_t job, build, leader;
    bool reuse;
  };
  FARM_ASSIGN_OR_RETURN(
      std::vector<Settle> todo, CollectRows(*q, 500, [](const Stmt& r) {
        return Settle{r.Int(0), r.Int(1), r.Int(2), r.Int(3) == kJobSucceeded && r.Int(4) != 0};
      }));
  std::vector<int64_t> settled;
  for (const Settle& s : todo) {
    if (s.reuse) {
      FARM_RETURN_IF_ERROR(SucceedFrom(s.job, s.leader, now_ms));
    } else {
      FARM_ASSIGN_OR_RETURN(
          auto up, db_->Prepare("UPDATE jobs SET not_before_ms = 0, error = '' WHERE id = ?"));
      up->Bind(s.job);
      FARM_RETURN_IF_ERROR(up->Run());
    }
    FARM_ASSIGN_OR_RETURN(auto del, db_->Prepare("DELETE FROM job_merges WHERE job_id = ?"));
    del->Bind(s.job);
    FARM_RETURN_IF_ERROR(del->Run());
    FARM_RETURN_IF_ERROR(RefreshBuildState(s.build, now_ms));
    settled.push_back(s.job);
  }
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (!settled.empty()) BumpQueue();  // followers of a failed leader are leasable now
  return settled;
}

}  // namespace farm::store
