// Validation jobs and the validation state of artifacts: queueing a job that validates an
// earlier attempt's wheels, and storing its report with those wheels.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

Status SqlStore::StoreValidation(const JobRow& job, const CompletionReport& r) {
  if (job.kind == kJobValidate) {
    // A validation in another cell than the wheels were built in (a stable-ABI wheel in
    // another torch) is about that torch only: its job's state and error say how it went.
    FARM_ASSIGN_OR_RETURN(JobRow target, GetJobLocked(job.target_job_id));
    if (target.cell != job.cell) return Status::Ok();
  }
  if (job.kind != kJobValidate) {
    FARM_ASSIGN_OR_RETURN(auto v,
                          db_->Prepare("UPDATE artifacts SET validation = ?, validation_state = ? "
                                       "WHERE job_id = ? AND attempt = ?"));
    v->BindBlob(r.validation).Bind(r.validation_state).Bind(r.job_id).Bind(r.attempt);
    return v->Run();
  }
  // Copies of the same bytes (jobs answered from this one's wheels) that still wait for
  // hardware take the new report too; the target's own rows take it whatever they held.
  FARM_ASSIGN_OR_RETURN(
      auto copies,
      db_->Prepare(
          "UPDATE artifacts SET validation = ?, validation_state = ? WHERE validation_state = ? "
          "AND sha256 IN (SELECT sha256 FROM artifacts WHERE job_id = ? AND attempt = ?)"));
  copies->BindBlob(r.validation)
      .Bind(r.validation_state)
      .Bind(kValidationPendingHardware)
      .Bind(job.target_job_id)
      .Bind(job.target_attempt);
  FARM_RETURN_IF_ERROR(copies->Run());
  FARM_ASSIGN_OR_RETURN(auto target,
                        db_->Prepare("UPDATE artifacts SET validation = ?, validation_state = ? "
                                     "WHERE job_id = ? AND attempt = ?"));
  target->BindBlob(r.validation)
      .Bind(r.validation_state)
      .Bind(job.target_job_id)
      .Bind(job.target_attempt);
  return target->Run();
}

Result<JobRow> SqlStore::QueueValidationLocked(const JobRow& job, bool any_state, bool* inserted) {
  *inserted = false;
  if (job.kind != kJobValidate || job.target_job_id <= 0) {
    return Status::InvalidArgument("a validation job needs kind validate and a target job");
  }
  FARM_ASSIGN_OR_RETURN(
      auto earlier,
      db_->Prepare(std::string("SELECT ") + kJobColumns +
                   " FROM jobs WHERE kind = 2 AND target_job_id = ? AND target_attempt = ? "
                   "ORDER BY id LIMIT 10000"));
  earlier->Bind(job.target_job_id).Bind(job.target_attempt);
  for (int i = 0; i < 10000; ++i) {
    FARM_ASSIGN_OR_RETURN(bool found, earlier->Step());
    if (!found) break;
    JobRow other = JobFromRow(*earlier);
    bool open = other.state == kJobPending || other.state == kJobRunning;
    if (other.cell == job.cell && (open || any_state)) return other;
  }
  FARM_ASSIGN_OR_RETURN(JobRow row, InsertPendingJob(job));
  *inserted = true;
  return row;
}

Result<JobRow> SqlStore::InsertPendingJob(const JobRow& job) {
  JobRow row = job;
  row.state = kJobPending;
  row.attempt = 0;
  row.reused_from = 0;
  row.build_key.clear();
  FARM_RETURN_IF_ERROR(InsertJob(&row));
  return row;
}

Result<JobRow> SqlStore::QueueValidationJob(const JobRow& job) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  bool inserted = false;
  FARM_ASSIGN_OR_RETURN(JobRow row, QueueValidationLocked(job, /*any_state=*/false, &inserted));
  if (!inserted) return row;  // one of this target attempt and cell is pending or running
  FARM_RETURN_IF_ERROR(txn.Commit());
  BumpQueue();
  return row;
}

Result<std::vector<JobRow>> SqlStore::ListValidationJobs(int64_t target_job_id,
                                                         int target_attempt) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          std::string("SELECT ") + kJobColumns +
          " FROM jobs WHERE kind = 2 AND target_job_id = ? AND target_attempt = ? ORDER BY id "
          "LIMIT 10000"));
  s->Bind(target_job_id).Bind(target_attempt);
  return CollectRows(*s, 10000, JobFromRow);
}

Result<std::vector<ArtifactRow>> SqlStore::ListArtifactsInValidationState(int state,
                                                                          int64_t after_id,
                                                                          int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(std::string("SELECT ") + ArtifactColumns() +
                   " FROM artifacts WHERE validation_state = ? AND id > ? ORDER BY id LIMIT ?"));
  s->Bind(state).Bind(after_id).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, ArtifactFromStmt);
}

Status SqlStore::SetArtifactValidationState(int64_t artifact_id, int state) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("UPDATE artifacts SET validation_state = ? WHERE id = ?"));
  s->Bind(state).Bind(artifact_id);
  return RunWriteOfOne(*s, "no artifact " + std::to_string(artifact_id));
}

Result<QueuedProof> SqlStore::QueueNewTorchProof(const JobRow& job, const std::string& cell_key,
                                                 const std::string& torch) {
  if (job.kind != kJobValidate || job.target_job_id <= 0) {
    return Status::InvalidArgument("a proof with a new torch is a validation job with a target");
  }
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(auto key, db_->Prepare("INSERT OR IGNORE INTO new_torch_proofs("
                                               "target_job_id, cell_key, torch, job_id, "
                                               "created_ms) VALUES (?,?,?,0,?)"));
  key->Bind(job.target_job_id).Bind(cell_key).Bind(torch).Bind(job.created_ms);
  FARM_RETURN_IF_ERROR(key->Run());
  if (db_->Changes() == 0) {
    // Queued before (this farmd, or one killed before it knew): that job stands.
    FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT job_id FROM new_torch_proofs WHERE "
                                               "target_job_id = ? AND cell_key = ?"));
    s->Bind(job.target_job_id).Bind(cell_key);
    FARM_ASSIGN_OR_RETURN(bool found, s->Step());
    if (!found) return Status::Internal("new_torch_proofs lost a key inside its transaction");
    FARM_ASSIGN_OR_RETURN(JobRow earlier, GetJobLocked(s->Int(0)));
    return QueuedProof{.job = std::move(earlier), .queued = false};
  }
  FARM_ASSIGN_OR_RETURN(JobRow row, InsertPendingJob(job));
  FARM_ASSIGN_OR_RETURN(auto link, db_->Prepare("UPDATE new_torch_proofs SET job_id = ? WHERE "
                                                "target_job_id = ? AND cell_key = ?"));
  link->Bind(row.id).Bind(job.target_job_id).Bind(cell_key);
  FARM_RETURN_IF_ERROR(link->Run());
  FARM_RETURN_IF_ERROR(txn.Commit());
  BumpQueue();
  return QueuedProof{.job = std::move(row), .queued = true};
}

Result<std::vector<RefusedTorch>> SqlStore::ListRefusedTorches(int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT DISTINCT a.sha256, p.torch, v.error, v.id FROM "
                           "new_torch_proofs p JOIN jobs v ON v.id = p.job_id JOIN artifacts a "
                           "ON a.job_id = p.target_job_id AND a.attempt = v.target_attempt "
                           "WHERE v.state = ? ORDER BY v.id, a.sha256 LIMIT ?"));
  s->Bind(kJobFailed).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, [](const Stmt& row) {
    return RefusedTorch{
        .sha256 = row.Text(0), .torch = row.Text(1), .reason = row.Text(2), .job_id = row.Int(3)};
  });
}

}  // namespace farm::store
