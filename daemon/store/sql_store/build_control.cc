// BuildControl: storing builds (alone or linked to merges, schedule runs and required
// jobs), settling merged jobs, retrying a job and cancelling a build.
#include <algorithm>

#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

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

Status SqlStore::InsertJob(JobRow* job) {
  bool reused = job->reused_from > 0;
  if (reused) job->state = kJobSucceeded, job->finished_ms = job->created_ms;
  FARM_ASSIGN_OR_RETURN(
      auto j,
      db_->Prepare(
          "INSERT INTO jobs(build_id, cell, state, priority, build_key, reused_from, created_ms, "
          "finished_ms, max_attempts, kind, target_job_id, target_attempt, needs, compile_mib, "
          "validation_mib, held, key_base, not_before_ms, error, release_candidate) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
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
      .Bind(job->error)
      .Bind(job->release_candidate ? 1 : 0);
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

Status SqlStore::RetryJob(int64_t job_id, int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(JobRow job, GetJobLocked(job_id));
  if (job.state != kJobFailed && job.state != kJobCancelled) {
    return Status::FailedPrecondition("job " + std::to_string(job_id) +
                                      " did not fail and was not cancelled; nothing to retry");
  }
  // The retried job gets a fresh budget: as many further attempts as it had in all. A held
  // job waits for its required jobs again (ResolveHeldJobs settles it).
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE jobs SET state = ?, error = ?, finished_ms = 0, cancel_requested = 0, "
          "worker_id = '', lease_expiry_ms = 0, not_before_ms = ?, max_attempts = ? WHERE id = ?"));
  s->Bind(kJobPending)
      .Bind(std::string(job.held > 0 ? "waiting for the jobs it requires" : ""))
      .Bind(job.held > 0 ? kWaitingNotBefore : 0)
      .Bind(job.attempt + std::max(job.max_attempts, 1))
      .Bind(job_id);
  FARM_RETURN_IF_ERROR(s->Run());
  FARM_RETURN_IF_ERROR(RefreshBuildState(job.build_id, now_ms));
  FARM_RETURN_IF_ERROR(ReholdConsumers(job_id, now_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  BumpQueue();
  return Status::Ok();
}

Status SqlStore::CancelBuild(int64_t build_id, int64_t now_ms, const std::string& who) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto check, db_->Prepare("SELECT state FROM builds WHERE id = ?"));
  check->Bind(build_id);
  FARM_ASSIGN_OR_RETURN(bool exists, check->Step());
  if (!exists) return Status::NotFound("no build " + std::to_string(build_id));
  const int state = static_cast<int>(check->Int(0));
  if (state == kBuildSucceeded || state == kBuildFailed || state == kBuildCancelled) {
    static const char* kEnded[] = {"", "", "", "succeeded", "failed", "was cancelled"};
    return Status::FailedPrecondition("build " + std::to_string(build_id) + " already " +
                                      kEnded[state] + "; there is nothing to cancel");
  }
  const std::string by = who.empty() ? "unknown" : who;
  FARM_ASSIGN_OR_RETURN(
      auto pending,
      db_->Prepare("UPDATE jobs SET state = ?, error = ?, finished_ms = ?, cancelled_by = ? "
                   "WHERE build_id = ? AND state = 1"));
  pending->Bind(kJobCancelled).Bind("cancelled by " + by).Bind(now_ms).Bind(by).Bind(build_id);
  FARM_RETURN_IF_ERROR(pending->Run());
  FARM_ASSIGN_OR_RETURN(auto running,
                        db_->Prepare("UPDATE jobs SET cancel_requested = 1, cancelled_by = ? WHERE "
                                     "build_id = ? AND state = 2"));
  running->Bind(by).Bind(build_id);
  FARM_RETURN_IF_ERROR(running->Run());
  FARM_RETURN_IF_ERROR(RefreshBuildState(build_id, now_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return Status::Ok();
}

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
