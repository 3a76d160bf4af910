#include "daemon/model/convert.h"

#include <sstream>
#include <unordered_map>

#include "common/clock.h"
#include "common/log.h"

namespace farm::model {

namespace {

// Times not reached yet (0) stay empty.
std::string Rfc3339OrEmpty(int64_t ms) { return ms > 0 ? FormatRfc3339(ms) : ""; }

}  // namespace

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

farm::v1::RecipeName NameToProto(const store::RecipeNameRow& row) {
  farm::v1::RecipeName n;
  n.set_name(row.name);
  n.set_owner(row.owner);
  n.set_claimed_at(FormatRfc3339(row.claimed_ms));
  n.set_updated_at(FormatRfc3339(row.updated_ms));
  return n;
}

farm::v1::AuditRecord AuditToProto(const store::AuditRow& row) {
  farm::v1::AuditRecord r;
  r.set_id(row.id);
  r.set_time(FormatRfc3339(row.time_ms));
  r.set_principal(row.principal);
  r.set_role(row.role);
  r.set_action(row.action);
  r.set_target(row.target);
  r.set_outcome(row.outcome);
  r.set_detail(row.detail);
  return r;
}

farm::v1::Host HostToProto(const store::HostRow& row) {
  farm::v1::Host h;
  if (!row.vars.empty()) h.ParseFromString(row.vars);
  h.set_name(row.name);
  h.set_address(row.address);
  h.set_kind(row.kind);
  h.set_state(row.state);
  h.set_changed(row.changed);
  h.set_ok(row.ok);
  h.set_failed(row.failed);
  h.set_unreachable(row.unreachable);
  h.set_runs(row.runs);
  h.set_created_at(Rfc3339OrEmpty(row.created_ms));
  h.set_started_at(Rfc3339OrEmpty(row.started_ms));
  h.set_finished_at(Rfc3339OrEmpty(row.finished_ms));
  h.set_error(log::Redact(row.error));
  return h;
}

farm::v1::Publication PublicationToProto(const store::PublicationRow& row) {
  farm::v1::Publication p;
  p.set_id(row.id);
  p.set_build_id(row.build_id);
  p.set_artifact_id(row.artifact_id);
  p.set_target(row.target);
  p.set_kind(row.kind);
  p.set_repo(row.repo);
  p.set_ref(row.ref);
  p.set_path(row.path);
  p.set_filename(row.filename);
  p.set_sha256(row.sha256);
  p.set_size(row.size);
  p.set_state(std::string(store::PublicationStateName(row.state)));
  p.set_attempts(row.attempts);
  p.set_error(log::Redact(row.error));
  p.set_remote_url(row.remote_url);
  if (row.state == store::PublicationState::kPending && row.not_before_ms > 0) {
    p.set_next_attempt_at(FormatRfc3339(row.not_before_ms));
  }
  p.set_updated_at(FormatRfc3339(row.updated_ms));
  p.set_label(row.label);
  return p;
}

farm::v1::CachedFile CachedFileToProto(const store::UpstreamPreloadRow& row) {
  farm::v1::CachedFile f;
  f.set_source(row.source);
  f.set_path(row.path);
  f.set_kind(row.kind);
  f.set_sha256(row.sha256);
  f.set_size(row.size);
  f.set_added_by(row.added_by);
  f.set_added_at(FormatRfc3339(row.created_ms));
  return f;
}

farm::v1::SourceArchive SourceArchiveToProto(const store::SourceArchiveRow& row) {
  farm::v1::SourceArchive a;
  a.set_sha256(row.sha256);
  a.set_size(row.size);
  a.set_origin(row.origin);
  return a;
}

}  // namespace farm::model
