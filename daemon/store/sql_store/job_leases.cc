// JobLeases: a job's attempts from lease to end (lease, renew, complete, expire, release,
// reattach), and the helpers every job transition uses. Each public method is one
// transaction that also brings the build's state up to date.
#include <algorithm>
#include <limits>

#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

// When a lease ends: at the end of the clock's range rather than wrapped past it, for a
// clock or lease length at the edge of what the API accepts.
static int64_t LeaseEnd(int64_t now_ms, int64_t lease_ms) {
  int64_t end = 0;
  if (__builtin_add_overflow(now_ms, lease_ms, &end)) {
    return lease_ms > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return end;
}

Status SqlStore::RefreshBuildState(int64_t build_id, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "SELECT state, COUNT(*) FROM jobs WHERE build_id = ? AND kind = 1 GROUP BY state"));
  s->Bind(build_id);
  int64_t counts[6] = {0, 0, 0, 0, 0, 0};
  int64_t total = 0;
  FARM_RETURN_IF_ERROR(ForEachRow(*s, 16, [&](const Stmt& r) {
    int64_t state = r.Int(0);
    if (state >= 0 && state < 6) counts[state] = r.Int(1);
    total += r.Int(1);
  }));
  int64_t terminal = counts[kJobSucceeded] + counts[kJobFailed] + counts[kJobCancelled];
  int state = kBuildQueued;
  if (total > 0 && terminal == total) {
    state = counts[kJobFailed] ? kBuildFailed
                               : (counts[kJobCancelled] ? kBuildCancelled : kBuildSucceeded);
  } else if (counts[kJobRunning] > 0 || terminal > 0) {
    state = kBuildRunning;
  }
  bool done = state == kBuildSucceeded || state == kBuildFailed || state == kBuildCancelled;
  FARM_ASSIGN_OR_RETURN(auto up,
                        db_->Prepare("UPDATE builds SET state = ?, finished_ms = ? WHERE id = ?"));
  up->Bind(state).Bind(done ? now_ms : int64_t{0}).Bind(build_id);
  return up->Run();
}

Status SqlStore::EndAttempt(const JobRow& job, int cause, int exit_code, const std::string& detail,
                            int64_t peak_rss, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("UPDATE attempts SET cause = ?, exit_code = ?, detail = ?, "
                                     "peak_rss_bytes = MAX(peak_rss_bytes, ?), finished_ms = ? "
                                     "WHERE job_id = ? AND number = ?"));
  s->Bind(cause).Bind(exit_code).Bind(detail).Bind(peak_rss).Bind(now_ms).Bind(job.id).Bind(
      job.attempt);
  return s->Run();
}

Status SqlStore::SetJobTerminal(int64_t job_id, int state, const std::string& error,
                                int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("UPDATE jobs SET state = ?, error = ?, finished_ms = "
                                             "?, lease_expiry_ms = 0 WHERE id = ?"));
  s->Bind(state).Bind(error).Bind(now_ms).Bind(job_id);
  return s->Run();
}

Status SqlStore::Requeue(int64_t job_id, int64_t not_before_ms) {
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE jobs SET state = ?, worker_id = '', lease_expiry_ms = 0, not_before_ms = ? "
          "WHERE id = ?"));
  s->Bind(kJobPending).Bind(not_before_ms).Bind(job_id);
  return s->Run();
}

Status SqlStore::TogetherInOneTransaction(const std::function<Status()>& calls) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  Status done = calls();
  if (done.ok()) done = txn.Commit();
  // The hint was refreshed inside, from writes that may now be undone.
  if (!done.ok()) pending_jobs_.store(-1);
  return done;
}

void SqlStore::RefreshQueueHint() {
  // One lookup in jobs_by_state_not_before, not a count of the pending jobs.
  auto s =
      db_->Prepare("SELECT not_before_ms FROM jobs WHERE state = 1 ORDER BY not_before_ms LIMIT 1");
  Result<bool> row = s.ok() ? s.value()->Step() : Result<bool>(s.status());
  // On an error "unknown" makes every poll query the store, as if there were no hint.
  earliest_pending_ms_.store(row.ok() && *row ? s.value()->Int(0) : 0);
  pending_jobs_.store(!row.ok() ? -1 : (*row ? 1 : 0));
}

bool SqlStore::MayHaveLeasableJob(int64_t now_ms) const {
  int64_t pending = pending_jobs_.load();
  return pending < 0 || (pending > 0 && earliest_pending_ms_.load() <= now_ms);
}

Status SqlStore::WriteLease(JobRow* job, const std::string& worker_id, int64_t now_ms,
                            int64_t lease_ms) {
  job->attempt += 1;
  job->state = kJobRunning;
  job->worker_id = worker_id;
  job->lease_expiry_ms = LeaseEnd(now_ms, lease_ms);
  if (job->started_ms == 0) job->started_ms = now_ms;
  FARM_ASSIGN_OR_RETURN(
      auto ins,
      db_->Prepare("INSERT INTO attempts(job_id, number, worker_id, started_ms) VALUES (?,?,?,?)"));
  ins->Bind(job->id).Bind(job->attempt).Bind(worker_id).Bind(now_ms);
  FARM_RETURN_IF_ERROR(ins->Run());
  FARM_ASSIGN_OR_RETURN(
      auto up,
      db_->Prepare("UPDATE jobs SET state = ?, attempt = ?, worker_id = ?, lease_expiry_ms = ?, "
                   "started_ms = ? WHERE id = ? AND state = 1"));
  up->Bind(kJobRunning)
      .Bind(job->attempt)
      .Bind(worker_id)
      .Bind(job->lease_expiry_ms)
      .Bind(job->started_ms)
      .Bind(job->id);
  return up->Run();
}

Result<std::vector<int64_t>> SqlStore::ListLeasableJobIds(int64_t now_ms, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("SELECT id FROM jobs WHERE state = 1 AND held = 0 AND "
                                     "not_before_ms <= ? ORDER BY priority DESC, id ASC LIMIT ?"));
  s->Bind(now_ms).Bind(limit);
  return CollectRows(*s, limit, [](const Stmt& r) { return r.Int(0); });
}

Result<std::vector<std::optional<JobRow>>> SqlStore::LeaseJobs(
    const std::vector<LeaseRequest>& requests, int64_t now_ms, int64_t lease_ms) {
  Locked lock(this);
  if (pending_jobs_.load() < 0) RefreshQueueHint();
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  std::vector<std::optional<JobRow>> out;
  std::vector<int64_t> builds;
  for (const LeaseRequest& r : requests) {
    auto job = GetJobLocked(r.job_id);
    if (!job.ok() || job->state != kJobPending || job->held > 0 || job->not_before_ms > now_ms) {
      out.emplace_back(std::nullopt);
      continue;
    }
    FARM_RETURN_IF_ERROR(WriteLease(&*job, r.worker_id, now_ms, lease_ms));
    if (std::find(builds.begin(), builds.end(), job->build_id) == builds.end())
      builds.push_back(job->build_id);
    out.emplace_back(std::move(*job));
  }
  // Once per build, not per job: a batch often holds many cells of one build.
  for (int64_t build : builds) FARM_RETURN_IF_ERROR(RefreshBuildState(build, now_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  int64_t leased = std::count_if(out.begin(), out.end(), [](const auto& j) { return j; });
  if (leased > 0) {
    RefreshQueueHint();  // fewer pending jobs, maybe none: one index lookup
    Bump();
  }
  return out;
}

Result<std::optional<JobRow>> SqlStore::AcquireJob(const std::string& worker_id, int64_t now_ms,
                                                   int64_t lease_ms, const PlacementFn& placeable) {
  Locked lock(this);
  if (pending_jobs_.load() < 0) RefreshQueueHint();  // first poll after open
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(
      auto pending,
      QueryJobs("state = 1 AND not_before_ms <= ? ORDER BY priority DESC, id ASC", now_ms, 500));
  for (JobRow& job : pending) {
    if (placeable && !placeable(job).empty()) continue;
    FARM_RETURN_IF_ERROR(WriteLease(&job, worker_id, now_ms, lease_ms));
    FARM_RETURN_IF_ERROR(RefreshBuildState(job.build_id, now_ms));
    FARM_RETURN_IF_ERROR(txn.Commit());
    RefreshQueueHint();  // one job fewer, maybe none
    Bump();
    return std::optional<JobRow>(job);
  }
  return std::optional<JobRow>();
}

Result<std::vector<JobRow>> SqlStore::RenewLeases(const std::string& worker_id, int64_t now_ms,
                                                  int64_t lease_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("UPDATE jobs SET lease_expiry_ms = ? WHERE worker_id = ? AND state = 2"));
  s->Bind(LeaseEnd(now_ms, lease_ms)).Bind(worker_id);
  FARM_RETURN_IF_ERROR(s->Run());
  return CancelRequestedLocked(worker_id);
}

Result<std::vector<JobRow>> SqlStore::CancelRequestedJobs(const std::string& worker_id) {
  Locked lock(this);
  return CancelRequestedLocked(worker_id);
}

Result<std::vector<JobRow>> SqlStore::CancelRequestedLocked(const std::string& worker_id) {
  FARM_ASSIGN_OR_RETURN(
      auto q,
      db_->Prepare(std::string("SELECT ") + kJobColumns +
                   " FROM jobs WHERE worker_id = ? AND state = 2 AND cancel_requested = 1"));
  q->Bind(worker_id);
  return CollectRows(*q, 10000, JobFromRow);
}

namespace {

// The job state an ended attempt leads to, or kJobPending to run it again.
int NextJobState(const JobRow& job, const CompletionReport& r) {
  if (r.cause == kCauseCompleted && r.exit_code == 0) return kJobSucceeded;
  if (job.cancel_requested || r.cause == kCauseCancelled) return kJobCancelled;
  bool can_retry = job.attempt < r.max_attempts;
  bool infrastructure = r.cause == kCauseInfrastructure || r.cause == kCauseLostWorker;
  if (can_retry && (infrastructure || r.retry_build_failures)) return kJobPending;
  return kJobFailed;
}

}  // namespace

Result<int> SqlStore::CompleteAttempt(const CompletionReport& r, int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(JobRow job, GetJobLocked(r.job_id));
  std::string which =
      "attempt " + std::to_string(r.attempt) + " of job " + std::to_string(r.job_id);
  if (r.attempt != job.attempt) {
    return Status::FailedPrecondition(which + " was superseded by attempt " +
                                      std::to_string(job.attempt));
  }
  if (job.state != kJobRunning) {
    // The same report again (a retry after a lost reply) is answered with the outcome.
    if (job.state != kJobPending) return job.state;
    return Status::FailedPrecondition(which + " already ended; the job is queued again");
  }
  if (job.worker_id != r.worker_id) {
    return Status::FailedPrecondition(which + " is held by another worker");
  }
  int next = NextJobState(job, r);
  FARM_RETURN_IF_ERROR(EndAttempt(job, r.cause, r.exit_code, r.detail, r.peak_rss_bytes, now_ms));
  if (r.cache_hits >= 0) {
    FARM_ASSIGN_OR_RETURN(auto c, db_->Prepare("UPDATE attempts SET cache_hits = ?, cache_misses = "
                                               "? WHERE job_id = ? AND number = ?"));
    c->Bind(r.cache_hits).Bind(r.cache_misses).Bind(r.job_id).Bind(r.attempt);
    FARM_RETURN_IF_ERROR(c->Run());
  }
  if (!r.validation.empty()) FARM_RETURN_IF_ERROR(StoreValidation(job, r));
  if (next == kJobPending) {
    FARM_RETURN_IF_ERROR(Requeue(job.id, r.retry_not_before_ms));
  } else {
    std::string error = next == kJobSucceeded ? "" : r.detail;
    // Who cancelled it, not how the worker heard of it.
    if (next == kJobCancelled && !job.cancelled_by.empty())
      error = "cancelled by " + job.cancelled_by;
    FARM_RETURN_IF_ERROR(SetJobTerminal(job.id, next, error, now_ms));
  }
  int queued = 0;
  for (const JobRow& validation : next == kJobSucceeded ? r.on_success : std::vector<JobRow>{}) {
    bool inserted = false;
    FARM_RETURN_IF_ERROR(QueueValidationLocked(validation, /*any_state=*/true, &inserted).status());
    queued += inserted;
  }
  FARM_RETURN_IF_ERROR(RefreshBuildState(job.build_id, now_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (next == kJobPending || queued > 0) {
    BumpQueue();
  } else {
    Bump();
  }
  return next;
}

Status SqlStore::LoseJobs(const std::vector<JobRow>& jobs, const std::string& detail,
                          int64_t now_ms) {
  for (const JobRow& job : jobs) {
    FARM_RETURN_IF_ERROR(EndAttempt(job, kCauseLostWorker, -1, detail, 0, now_ms));
    if (job.cancel_requested) {
      FARM_RETURN_IF_ERROR(SetJobTerminal(
          job.id, kJobCancelled,
          job.cancelled_by.empty() ? "cancelled" : "cancelled by " + job.cancelled_by, now_ms));
    } else if (job.attempt < job.max_attempts) {
      FARM_RETURN_IF_ERROR(Requeue(job.id, 0));
    } else {
      FARM_RETURN_IF_ERROR(SetJobTerminal(job.id, kJobFailed, detail, now_ms));
    }
    FARM_RETURN_IF_ERROR(RefreshBuildState(job.build_id, now_ms));
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> SqlStore::ExpireLeases(int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto expired,
                        QueryJobs("state = 2 AND lease_expiry_ms < ? ORDER BY id", now_ms, 10000));
  std::vector<int64_t> ids;
  for (const JobRow& job : expired) {
    FARM_RETURN_IF_ERROR(
        LoseJobs({job}, "worker " + job.worker_id + " stopped renewing its lease", now_ms));
    ids.push_back(job.id);
  }
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (!ids.empty()) BumpQueue();
  return ids;
}

Result<std::vector<int64_t>> SqlStore::ReleaseWorkerJobs(const std::string& worker_id,
                                                         const std::vector<int64_t>& keep,
                                                         const std::string& detail,
                                                         int64_t now_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto held, db_->Prepare(std::string("SELECT ") + kJobColumns +
                                                " FROM jobs WHERE state = 2 AND worker_id = ?"));
  held->Bind(worker_id);
  std::vector<JobRow> lost;
  FARM_RETURN_IF_ERROR(ForEachRow(*held, 10000, [&](const Stmt& r) {
    JobRow job = JobFromRow(r);
    if (std::find(keep.begin(), keep.end(), job.id) == keep.end()) lost.push_back(job);
  }));
  FARM_RETURN_IF_ERROR(LoseJobs(lost, detail, now_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  std::vector<int64_t> ids;
  for (const auto& j : lost) ids.push_back(j.id);
  if (!ids.empty()) BumpQueue();
  return ids;
}

Result<bool> SqlStore::ReattachAttempt(int64_t job_id, int attempt, const std::string& worker_id,
                                       int64_t now_ms, int64_t lease_ms) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(JobRow job, GetJobLocked(job_id));
  if (job.state != kJobPending || job.attempt != attempt || job.cancel_requested) return false;
  FARM_ASSIGN_OR_RETURN(
      auto owner,
      db_->Prepare("SELECT worker_id FROM attempts WHERE job_id = ? AND number = ? AND cause = ?"));
  owner->Bind(job_id).Bind(attempt).Bind(kCauseLostWorker);
  FARM_ASSIGN_OR_RETURN(bool found, owner->Step());
  if (!found || owner->Text(0) != worker_id) return false;
  FARM_ASSIGN_OR_RETURN(
      auto reopen,
      db_->Prepare("UPDATE attempts SET cause = 0, exit_code = 0, detail = '', finished_ms = 0 "
                   "WHERE job_id = ? AND number = ?"));
  reopen->Bind(job_id).Bind(attempt);
  FARM_RETURN_IF_ERROR(reopen->Run());
  FARM_ASSIGN_OR_RETURN(
      auto lease,
      db_->Prepare("UPDATE jobs SET state = ?, worker_id = ?, lease_expiry_ms = ? WHERE id = ?"));
  lease->Bind(kJobRunning).Bind(worker_id).Bind(LeaseEnd(now_ms, lease_ms)).Bind(job_id);
  FARM_RETURN_IF_ERROR(lease->Run());
  FARM_RETURN_IF_ERROR(RefreshBuildState(job.build_id, now_ms));
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return true;
}

Status SqlStore::ExtendRunningLeases(int64_t now_ms, int64_t lease_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("UPDATE jobs SET lease_expiry_ms = ? WHERE state = 2"));
  s->Bind(LeaseEnd(now_ms, lease_ms));
  return s->Run();
}

Result<bool> SqlStore::RecordProgress(const ProgressReport& r) {
  Locked lock(this);
  // Only the attempt the worker holds and only while it runs; an unchanged report is no
  // write, so watchers are not woken by every heartbeat.
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("UPDATE attempts SET units_done = ?, units_total = ?, "
                   "peak_rss_bytes = MAX(peak_rss_bytes, ?) WHERE job_id = ? AND number = ? AND "
                   "worker_id = ? AND finished_ms = 0 AND (units_done != ? OR units_total != ? OR "
                   "peak_rss_bytes < ?)"));
  s->Bind(r.units_done)
      .Bind(r.units_total)
      .Bind(r.peak_rss_bytes)
      .Bind(r.job_id)
      .Bind(r.attempt)
      .Bind(r.worker_id)
      .Bind(r.units_done)
      .Bind(r.units_total)
      .Bind(r.peak_rss_bytes);
  return RunWrite(*s);
}

}  // namespace farm::store
