// Build graphs: jobs held until the jobs they require (recipe `requires:`) succeed, the
// wheels they consume, and the key those wheels give them.
#include <algorithm>

#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr int kMaxSettledPerCall = 500;

constexpr char kRequirementSelect[] =
    "SELECT r.job_id, r.required_job_id, q.build_id, r.recipe_name, r.for_build, "
    "r.for_validation, q.state, c.state, c.build_id, cb.recipe_name FROM job_requirements r "
    "JOIN jobs q ON q.id = r.required_job_id JOIN jobs c ON c.id = r.job_id "
    "JOIN builds cb ON cb.id = c.build_id ";

RequirementRow RequirementFromRow(const Stmt& s) {
  return ReadMembers<RequirementRow>(
      s, &RequirementRow::job_id, &RequirementRow::required_job_id,
      &RequirementRow::required_build_id, &RequirementRow::recipe_name, &RequirementRow::for_build,
      &RequirementRow::for_validation, &RequirementRow::required_state,
      &RequirementRow::consumer_state, &RequirementRow::consumer_build_id,
      &RequirementRow::consumer_recipe);
}

}  // namespace

Status SqlStore::HoldOnRequirements(std::vector<JobRow>* jobs, const BuildLinks& links) {
  for (const BuildLinks::Requirement& r : links.requirements) {
    if (r.index >= jobs->size()) return Status::Internal("requirement of a job not in the build");
    JobRow& job = (*jobs)[r.index];
    if (job.reused_from == 0) {
      job.held = links.force ? kHeldForced : kHeld;
      job.not_before_ms = kWaitingNotBefore;
    }
    FARM_ASSIGN_OR_RETURN(
        auto ins, db_->Prepare("INSERT OR IGNORE INTO job_requirements(job_id, required_job_id, "
                               "recipe_name, for_build, for_validation) VALUES (?,?,?,?,?)"));
    ins->Bind(job.id)
        .Bind(r.required_job_id)
        .Bind(r.recipe_name)
        .Bind(r.for_build ? 1 : 0)
        .Bind(r.for_validation ? 1 : 0);
    FARM_RETURN_IF_ERROR(ins->Run());
    FARM_ASSIGN_OR_RETURN(auto hold,
                          db_->Prepare("UPDATE jobs SET held = ?, not_before_ms = ?, error = ? "
                                       "WHERE id = ? AND reused_from = 0"));
    hold->Bind(links.force ? kHeldForced : kHeld)
        .Bind(kWaitingNotBefore)
        .Bind("waiting for job " + std::to_string(r.required_job_id) + " (" + r.recipe_name +
              ") to build the wheel it requires")
        .Bind(job.id);
    FARM_RETURN_IF_ERROR(hold->Run());
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> SqlStore::ResolveHeldJobs(int64_t now_ms,
                                                       const InputsKeyFn& inputs_key) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(std::vector<int64_t> settled, ResolveHeldLocked(now_ms, 0, inputs_key));
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (!settled.empty()) BumpQueue();  // released jobs are leasable now
  return settled;
}

// One pass over the held pending jobs (of `build_id`, or all when 0) whose required jobs
// all ended. A chain settles one link per pass: the next link's job ends only later.
Result<std::vector<int64_t>> SqlStore::ResolveHeldLocked(int64_t now_ms, int64_t build_id,
                                                         const InputsKeyFn& inputs_key) {
  if (!inputs_key) {
    return Status::FailedPrecondition("settling held jobs needs the key of their inputs");
  }
  FARM_ASSIGN_OR_RETURN(
      auto q,
      db_->Prepare(std::string("SELECT ") + kJobColumns +
                   " FROM jobs WHERE state = 1 AND held > 0 AND (? = 0 OR build_id = ?) AND "
                   "NOT EXISTS (SELECT 1 FROM job_requirements r JOIN jobs d ON d.id = "
                   "r.required_job_id WHERE r.job_id = jobs.id AND d.state IN (1, 2)) "
                   "ORDER BY id LIMIT ?"));
  q->Bind(build_id).Bind(build_id).Bind(kMaxSettledPerCall);
  FARM_ASSIGN_OR_RETURN(std::vector<JobRow> ready, CollectRows(*q, kMaxSettledPerCall, JobFromRow));
  std::vector<int64_t> settled;
  for (const JobRow& job : ready) {
    FARM_ASSIGN_OR_RETURN(
        auto failed,
        db_->Prepare("SELECT d.id, d.build_id, r.recipe_name, d.state, d.error FROM "
                     "job_requirements r JOIN jobs d ON d.id = r.required_job_id WHERE "
                     "r.job_id = ? AND d.state IN (4, 5) ORDER BY d.id LIMIT 1"));
    failed->Bind(job.id);
    FARM_ASSIGN_OR_RETURN(bool any_failed, failed->Step());
    if (any_failed) {
      std::string why = "required job " + std::to_string(failed->Int(0)) + " (" + failed->Text(2) +
                        ", build " + std::to_string(failed->Int(1)) + ") " +
                        (failed->Int(3) == kJobFailed ? "failed" : "was cancelled") +
                        (failed->Text(4).empty() ? "" : ": " + failed->Text(4)) +
                        "; retry it to build this job";
      FARM_ASSIGN_OR_RETURN(
          auto up,
          db_->Prepare("UPDATE jobs SET state = 4, error = ?, finished_ms = ? WHERE id = ?"));
      up->Bind(why).Bind(now_ms).Bind(job.id);
      FARM_RETURN_IF_ERROR(up->Run());
    } else {
      FARM_RETURN_IF_ERROR(ReleaseWithInputs(job, now_ms, inputs_key));
    }
    FARM_RETURN_IF_ERROR(RefreshBuildState(job.build_id, now_ms));
    settled.push_back(job.id);
  }
  return settled;
}

// Records the wheels of every required job as the job's inputs, sets its key, and answers
// it from a stored wheel, merges it onto an identical job in flight, or releases it.
Status SqlStore::ReleaseWithInputs(JobRow job, int64_t now_ms, const InputsKeyFn& inputs_key) {
  FARM_ASSIGN_OR_RETURN(auto del, db_->Prepare("DELETE FROM job_inputs WHERE job_id = ?"));
  del->Bind(job.id);
  FARM_RETURN_IF_ERROR(del->Run());
  FARM_ASSIGN_OR_RETURN(
      auto ins,
      db_->Prepare("INSERT OR IGNORE INTO job_inputs(job_id, artifact_id, required_job_id) "
                   "SELECT r.job_id, a.id, d.id FROM job_requirements r JOIN jobs d ON d.id = "
                   "r.required_job_id JOIN artifacts a ON a.job_id = d.id AND a.attempt = "
                   "d.attempt WHERE r.job_id = ?"));
  ins->Bind(job.id);
  FARM_RETURN_IF_ERROR(ins->Run());
  FARM_ASSIGN_OR_RETURN(auto shas,
                        db_->Prepare("SELECT a.sha256 FROM job_inputs i JOIN artifacts a ON a.id = "
                                     "i.artifact_id WHERE i.job_id = ?"));
  shas->Bind(job.id);
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> wheel_shas,
                        CollectRows(*shas, 10000, [](const Stmt& r) { return r.Text(0); }));
  const bool forced = job.held == kHeldForced;
  job.build_key = inputs_key(job.key_base, wheel_shas);
  FARM_ASSIGN_OR_RETURN(auto up,
                        db_->Prepare("UPDATE jobs SET held = 0, build_key = ?, not_before_ms = 0, "
                                     "error = '' WHERE id = ?"));
  up->Bind(job.build_key).Bind(job.id);
  FARM_RETURN_IF_ERROR(up->Run());
  if (job.build_key.empty() || forced) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(
      auto prior,
      db_->Prepare("SELECT id FROM jobs WHERE build_key = ? AND state = 3 AND id != ? AND EXISTS "
                   "(SELECT 1 FROM artifacts a WHERE a.job_id = jobs.id) ORDER BY id DESC "
                   "LIMIT 1"));
  prior->Bind(job.build_key).Bind(job.id);
  FARM_ASSIGN_OR_RETURN(bool found, prior->Step());
  if (found) return SucceedFrom(job.id, prior->Int(0), now_ms);
  return MergeOntoLeader(&job, now_ms);
}

// Consumers that failed because `job_id` did (directly or through a chain) wait again.
Status SqlStore::ReholdConsumers(int64_t job_id, int64_t now_ms) {
  std::vector<int64_t> frontier = {job_id};
  for (int depth = 0; depth < 32 && !frontier.empty(); ++depth) {
    std::vector<int64_t> next;
    for (int64_t id : frontier) {
      FARM_ASSIGN_OR_RETURN(
          auto q, db_->Prepare("SELECT c.id, c.build_id FROM job_requirements r JOIN jobs c ON "
                               "c.id = r.job_id WHERE r.required_job_id = ? AND c.state = 4 AND "
                               "c.held > 0"));
      q->Bind(id);
      FARM_ASSIGN_OR_RETURN(auto consumers, CollectRows(*q, 10000, [](const Stmt& r) {
                              return std::make_pair(r.Int(0), r.Int(1));
                            }));
      for (const auto& [consumer, build] : consumers) {
        FARM_ASSIGN_OR_RETURN(
            auto up, db_->Prepare("UPDATE jobs SET state = 1, finished_ms = 0, not_before_ms = "
                                  "?, error = ? WHERE id = ?"));
        up->Bind(kWaitingNotBefore)
            .Bind("waiting for job " + std::to_string(id) +
                  ", retried, to build the wheel "
                  "it requires")
            .Bind(consumer);
        FARM_RETURN_IF_ERROR(up->Run());
        FARM_RETURN_IF_ERROR(RefreshBuildState(build, now_ms));
        next.push_back(consumer);
      }
    }
    frontier = std::move(next);
  }
  return Status::Ok();
}

Result<std::vector<RequirementRow>> SqlStore::ListRequirements(int64_t job_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare(std::string(kRequirementSelect) +
                                             "WHERE r.job_id = ? ORDER BY r.rowid LIMIT 1000"));
  q->Bind(job_id);
  return CollectRows(*q, 1000, RequirementFromRow);
}

Result<std::vector<RequirementRow>> SqlStore::ListConsumers(int64_t job_id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto q,
                        db_->Prepare(std::string(kRequirementSelect) +
                                     "WHERE r.required_job_id = ? ORDER BY r.job_id LIMIT 1000"));
  q->Bind(job_id);
  return CollectRows(*q, 1000, RequirementFromRow);
}

Result<std::set<int64_t>> SqlStore::JobsInGraph(const std::vector<int64_t>& job_ids) {
  Locked lock(this);
  constexpr size_t kIdsPerQuery = 500;
  std::set<int64_t> out;
  for (size_t at = 0; at < job_ids.size(); at += kIdsPerQuery) {
    size_t n = std::min(kIdsPerQuery, job_ids.size() - at);
    std::string marks(2 * n - 1, ',');
    for (size_t i = 0; i < n; ++i) marks[2 * i] = '?';
    FARM_ASSIGN_OR_RETURN(
        auto q, db_->Prepare("SELECT job_id FROM job_requirements WHERE job_id IN (" + marks +
                             ") UNION SELECT required_job_id FROM job_requirements WHERE "
                             "required_job_id IN (" +
                             marks + ")"));
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < n; ++i) q->Bind(job_ids[at + i]);
    }
    FARM_RETURN_IF_ERROR(
        ForEachRow(*q, static_cast<int64_t>(2 * n), [&](const Stmt& r) { out.insert(r.Int(0)); }));
  }
  return out;
}

Result<std::vector<JobInputRow>> SqlStore::ListJobInputs(int64_t job_id) {
  Locked lock(this);
  // The artifact columns in ArtifactColumns() order, then the required job.
  FARM_ASSIGN_OR_RETURN(
      auto q, db_->Prepare("SELECT a.id, a.job_id, a.attempt, a.filename, a.sha256, a.size, "
                           "a.manifest, a.validation, a.created_ms, a.validation_state, "
                           "i.required_job_id FROM job_inputs i JOIN "
                           "artifacts a ON a.id = i.artifact_id WHERE i.job_id = ? ORDER BY a.id "
                           "LIMIT 1000"));
  q->Bind(job_id);
  return CollectRows(*q, 1000, [](const Stmt& r) {
    JobInputRow input;
    input.artifact = ArtifactFromStmt(r);
    input.required_job_id = r.Int(10);
    return input;
  });
}

}  // namespace farm::store
