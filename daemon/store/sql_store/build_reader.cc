// BuildReader: builds, their jobs and attempts, as the API and the dashboard read them.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kBuildColumns[] =
    "id, recipe_name, recipe, state, priority, submitted_by, rejected_cells, created_ms, "
    "finished_ms, source_sha256";

BuildRow BuildFromRow(const Stmt& s) {
  return ReadMembers<BuildRow>(s, &BuildRow::id, &BuildRow::recipe_name, &BuildRow::recipe,
                               &BuildRow::state, &BuildRow::priority, &BuildRow::submitted_by,
                               &BuildRow::rejected_cells, &BuildRow::created_ms,
                               &BuildRow::finished_ms, &BuildRow::source_sha256);
}

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

Result<std::map<int64_t, std::vector<JobRow>>> SqlStore::ListJobsOfBuilds(
    const std::vector<int64_t>& build_ids) {
  Locked lock(this);
  return SelectByIds<JobRow>(*db_,
                             std::string("SELECT ") + kJobColumns + " FROM jobs WHERE build_id IN",
                             "build_id, id", build_ids, JobFromRow, &JobRow::build_id);
}

Result<JobRow> SqlStore::GetJobLocked(int64_t id) {
  FARM_ASSIGN_OR_RETURN(auto rows, QueryJobs("id = ?", id, 1));
  if (rows.empty()) return Status::NotFound("no job " + std::to_string(id));
  return rows.front();
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
      *db_, std::string("SELECT ") + ArtifactColumns() + " FROM artifacts WHERE job_id IN",
      "job_id, id", job_ids, ArtifactFromStmt, &ArtifactRow::job_id);
}

Result<std::vector<JobRow>> SqlStore::GetJobs(const std::vector<int64_t>& ids) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto by_id,
      SelectByIds<JobRow>(*db_, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id IN",
                          "id", ids, JobFromRow, &JobRow::id));
  std::vector<JobRow> out;
  for (auto& [id, rows] : by_id) {
    for (auto& row : rows) out.push_back(std::move(row));
  }
  return out;
}

}  // namespace farm::store
