// JobStats: read-only queries for the dashboard, metrics and package index. Each takes the store's
// mutex like every other call; none writes, so none bumps the generation.
#include <algorithm>

#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

Result<std::vector<int64_t>> SqlStore::CountJobsByState() {
  Locked lock(this);
  // job_state_counts is kept by triggers on jobs (migration 017): a few rows.
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT state, n FROM job_state_counts"));
  std::vector<int64_t> counts(6, 0);
  FARM_RETURN_IF_ERROR(ForEachRow(*s, 64, [&](const Stmt& r) {
    int64_t state = r.Int(0);
    if (state >= 0 && state < 6) counts[static_cast<size_t>(state)] = r.Int(1);
  }));
  return counts;
}

Result<std::vector<JobRow>> SqlStore::ListJobsInState(int state, int64_t before_id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kJobColumns +
                           " FROM jobs WHERE state = ? AND id < ? ORDER BY id DESC LIMIT ?"));
  s->Bind(state).Bind(before_id > 0 ? before_id : INT64_MAX).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, JobFromRow);
}

Result<SpanHistogram> SqlStore::JobSpanHistogram(JobSpan span,
                                                 const std::vector<int64_t>& bounds_ms) {
  const bool wait = span == JobSpan::kQueueWait;
  if (bounds_ms == (wait ? kQueueWaitBoundsMs : kRunTimeBoundsMs)) return KeptHistogram(span);
  const std::string expr = wait ? "(started_ms - created_ms)" : "(finished_ms - started_ms)";
  const std::string where = wait ? "started_ms > 0 AND reused_from = 0"
                                 : "started_ms > 0 AND finished_ms > 0 AND state >= 3";
  // One pass over the jobs: a SUM(CASE) per bound, then the count and the sum.
  std::string sql = "SELECT COUNT(*), COALESCE(SUM(" + expr + "), 0)";
  for (size_t i = 0; i < bounds_ms.size(); ++i) {
    sql += ", COALESCE(SUM(CASE WHEN " + expr + " <= ? THEN 1 ELSE 0 END), 0)";
  }
  sql += " FROM jobs WHERE " + where;
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(sql));
  for (int64_t b : bounds_ms) s->Bind(b);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  SpanHistogram h;
  h.bounds_ms = bounds_ms;
  h.cumulative.assign(bounds_ms.size(), 0);
  if (!row) return h;
  h.count = s->Int(0);
  h.sum_ms = static_cast<double>(s->Int(1));
  for (size_t i = 0; i < bounds_ms.size(); ++i) h.cumulative[i] = s->Int(static_cast<int>(i) + 2);
  return h;
}

Result<SpanHistogram> SqlStore::KeptHistogram(JobSpan span) {
  const bool wait = span == JobSpan::kQueueWait;
  SpanHistogram h;
  h.bounds_ms = wait ? kQueueWaitBoundsMs : kRunTimeBoundsMs;
  h.cumulative.assign(h.bounds_ms.size(), 0);
  Locked lock(this);
  // job_span_buckets is kept by triggers on jobs (migration 017); its last row is +Inf.
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("SELECT le_ms, n, sum_ms FROM job_span_buckets WHERE span = ? "
                                     "ORDER BY le_ms"));
  s->Bind(wait ? 0 : 1);
  size_t i = 0;
  FARM_RETURN_IF_ERROR(ForEachRow(*s, 64, [&](const Stmt& r) {
    if (r.Int(0) == INT64_MAX) {
      h.count = r.Int(1);
      h.sum_ms = static_cast<double>(r.Int(2));
    } else if (i < h.bounds_ms.size() && r.Int(0) == h.bounds_ms[i]) {
      h.cumulative[i++] = r.Int(1);
    } else {
      return Status::Internal("job_span_buckets holds a bound the store does not keep: " +
                              std::to_string(r.Int(0)));
    }
    return Status::Ok();
  }));
  if (i != h.bounds_ms.size()) return Status::Internal("job_span_buckets lacks bounds");
  return h;
}

Result<std::vector<JobTimingRow>> SqlStore::ListJobTimings(int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("SELECT j.id, j.build_id, b.recipe_name, j.state, j.created_ms, "
                   "COALESCE(a.started_ms, j.started_ms), j.finished_ms, j.cell FROM jobs j "
                   "JOIN builds b ON b.id = j.build_id "
                   "LEFT JOIN attempts a ON a.job_id = j.id AND a.number = j.attempt "
                   "WHERE j.state >= 3 AND j.started_ms > 0 AND j.finished_ms > 0 AND j.kind = ? "
                   "ORDER BY j.finished_ms DESC LIMIT ?"));
  s->Bind(kJobBuild).Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, [](const Stmt& r) {
    return JobTimingRow{r.Int(0), r.Int(1), r.Text(2), static_cast<int>(r.Int(3)),
                        r.Int(4), r.Int(5), r.Int(6),  r.Text(7)};
  });
}

Result<std::vector<IndexArtifactRow>> SqlStore::ListIndexArtifacts(int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "SELECT a.id, a.job_id, a.attempt, a.filename, a.sha256, a.size, a.manifest, "
          "a.validation, a.created_ms, j.cell, j.release_candidate FROM artifacts a JOIN jobs j "
          "ON j.id = a.job_id "
          "WHERE j.state = 3 ORDER BY a.id LIMIT ?"));
  s->Bind(limit);
  return CollectRows(*s, int64_t{limit} + 1, [](const Stmt& r) {
    IndexArtifactRow row;
    row.artifact = ArtifactRow{r.Int(0),  r.Int(1),  static_cast<int>(r.Int(2)),
                               r.Text(3), r.Text(4), r.Int(5),
                               r.Text(6), r.Text(7), r.Int(8)};
    row.cell = r.Text(9);
    row.release_candidate = r.Int(10) != 0;
    return row;
  });
}

Result<std::optional<int64_t>> SqlStore::LastSuccessfulRunMs(const std::string& recipe_name,
                                                             const std::string& cell,
                                                             int64_t before_job_id) {
  Locked lock(this);
  // The counted attempt's own span: time spent queued between attempts, or before a
  // requeue, is no build time.
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "SELECT a.finished_ms - a.started_ms FROM jobs j JOIN builds b ON b.id = j.build_id "
          "JOIN attempts a ON a.job_id = j.id AND a.number = j.attempt "
          "WHERE j.cell = ? AND j.state = 3 AND j.id < ? AND j.reused_from = 0 AND j.kind = ? AND "
          "b.recipe_name = ? AND a.finished_ms > 0 ORDER BY j.id DESC LIMIT 1"));
  s->BindBlob(cell)
      .Bind(before_job_id > 0 ? before_job_id : INT64_MAX)
      .Bind(kJobBuild)
      .Bind(recipe_name);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return std::optional<int64_t>();
  return std::optional<int64_t>(std::max<int64_t>(0, s->Int(0)));
}

}  // namespace farm::store
