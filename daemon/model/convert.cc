#include "daemon/model/convert.h"

#include <sstream>
#include <unordered_map>

#include "common/clock.h"

namespace farm::model {

farm::v1::Build BuildToProto(const store::BuildRow& row) {
  farm::v1::Build b;
  b.set_id(row.id);
  b.set_recipe_name(row.recipe_name);
  b.set_state(static_cast<farm::v1::BuildState>(row.state));
  b.set_created_at(FormatRfc3339(row.created_ms));
  b.set_finished_at(FormatRfc3339(row.finished_ms));
  b.set_priority(row.priority);
  b.set_submitted_by(row.submitted_by);
  b.set_owner(row.submitted_by);
  *b.mutable_recipe() = ParseBlob<farm::v1::Recipe>(row.recipe);
  std::istringstream rejected(row.rejected_cells);
  std::string line;
  while (std::getline(rejected, line)) {
    if (!line.empty()) b.add_rejected_cells(line);
  }
  return b;
}

farm::v1::Job JobToProto(const store::JobRow& row) {
  farm::v1::Job j;
  j.set_id(row.id);
  j.set_build_id(row.build_id);
  *j.mutable_cell() = ParseBlob<farm::v1::MatrixCell>(row.cell);
  j.set_state(static_cast<farm::v1::JobState>(row.state));
  j.set_worker_id(row.worker_id);
  j.set_attempt(row.attempt);
  j.set_error(row.error);
  j.set_created_at(FormatRfc3339(row.created_ms));
  j.set_started_at(FormatRfc3339(row.started_ms));
  j.set_finished_at(FormatRfc3339(row.finished_ms));
  j.set_build_key(row.build_key);
  j.set_cancelled_by(row.cancelled_by);
  j.set_reused_from(row.reused_from);
  j.set_kind(row.kind == store::kJobValidate ? farm::v1::JOB_VALIDATE : farm::v1::JOB_BUILD);
  j.set_target_job_id(row.target_job_id);
  j.set_target_attempt(row.target_attempt);
  if (!row.needs.empty()) *j.mutable_needs() = ParseBlob<farm::v1::JobNeeds>(row.needs);
  return j;
}

farm::v1::Attempt AttemptToProto(const store::AttemptRow& row) {
  farm::v1::Attempt a;
  a.set_number(row.number);
  a.set_worker_id(row.worker_id);
  a.set_cause(static_cast<farm::v1::AttemptCause>(row.cause));
  a.set_detail(row.detail);
  a.set_started_at(FormatRfc3339(row.started_ms));
  a.set_finished_at(FormatRfc3339(row.finished_ms));
  a.set_exit_code(row.exit_code);
  a.set_peak_rss_bytes(row.peak_rss_bytes);
  if (row.cache_hits >= 0) {
    a.mutable_compile_cache()->set_hits(row.cache_hits);
    a.mutable_compile_cache()->set_misses(row.cache_misses);
  }
  a.set_units_done(row.units_done);
  a.set_units_total(row.units_total);
  return a;
}

farm::v1::Artifact ArtifactToProto(const store::ArtifactRow& row) {
  farm::v1::Artifact a;
  a.set_id(row.id);
  a.set_job_id(row.job_id);
  a.set_attempt(row.attempt);
  a.set_filename(row.filename);
  a.set_sha256(row.sha256);
  a.set_size(row.size);
  *a.mutable_manifest() = ParseBlob<farm::v1::ArchManifest>(row.manifest);
  *a.mutable_validation() = ParseBlob<farm::v1::ValidationReport>(row.validation);
  a.set_created_at(FormatRfc3339(row.created_ms));
  return a;
}

farm::v1::LogLine LogLineToProto(int64_t job_id, int attempt, const store::LogLineRow& row) {
  farm::v1::LogLine l;
  l.set_job_id(job_id);
  l.set_attempt(attempt);
  l.set_seq(row.seq);
  l.set_stream(static_cast<farm::v1::LogStream>(row.stream));
  l.set_text(row.text);
  l.set_time_unix_ms(row.time_ms);
  return l;
}

farm::v1::WorkerInfo WorkerToProto(const store::WorkerRow& row) {
  farm::v1::WorkerInfo w;
  w.set_id(row.id);
  w.set_name(row.name);
  *w.mutable_capabilities() = ParseBlob<farm::v1::Capabilities>(row.capabilities);
  w.set_state(std::string(store::WorkerStateName(row.state)));
  w.set_last_heartbeat(FormatRfc3339(row.last_heartbeat_ms));
  return w;
}

}  // namespace farm::model
