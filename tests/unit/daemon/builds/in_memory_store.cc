#include "tests/unit/daemon/builds/in_memory_store.h"

#include <algorithm>

namespace farm::builds::testing {
namespace {

Status Unused(const char* what) {
  return Status::Unimplemented(std::string(what) + " is not used by the use cases");
}

template <typename Map, typename Key>
auto Find(Map& rows, const Key& key, const std::string& what) -> Result<typename Map::mapped_type> {
  auto it = rows.find(key);
  if (it == rows.end()) return Status::NotFound("no " + what);
  return it->second;
}

}  // namespace

int64_t InMemoryStore::AddBuild(const std::string& recipe_name, const std::string& who,
                                bool succeeded) {
  int64_t id = next_id_++;
  builds[id] = store::BuildRow{.id = id,
                               .recipe_name = recipe_name,
                               .state = succeeded ? store::kBuildSucceeded : store::kBuildQueued,
                               .submitted_by = who};
  jobs[id] = store::JobRow{.id = id,
                           .build_id = id,
                           .state = succeeded ? store::kJobSucceeded : store::kJobPending,
                           .attempt = succeeded ? 1 : 0};
  return id;
}

void InMemoryStore::Lease(int64_t job_id, int number, const std::string& worker_id) {
  store::JobRow& job = jobs[job_id];
  job.state = store::kJobRunning;
  job.attempt = number;
  job.worker_id = worker_id;
  attempts[job_id].push_back({.job_id = job_id, .number = number, .worker_id = worker_id});
}

int64_t InMemoryStore::AddArtifact(int64_t job_id, int attempt, const std::string& sha256) {
  int64_t id = next_id_++;
  artifacts[id] = store::ArtifactRow{.id = id,
                                     .job_id = job_id,
                                     .attempt = attempt,
                                     .filename = "attn-1.0-py3-none-any.whl",
                                     .sha256 = sha256};
  return id;
}

Result<store::BuildRow> InMemoryStore::GetBuild(int64_t id) {
  return Find(builds, id, "build " + std::to_string(id));
}
Result<std::vector<store::BuildRow>> InMemoryStore::ListBuilds(int64_t, int) {
  return Unused("ListBuilds");
}
// Only the recipe name filter, which the use cases set.
Result<std::vector<store::BuildRow>> InMemoryStore::ListBuildsMatching(
    const store::BuildFilter& filter, int64_t before_id, int limit) {
  std::vector<store::BuildRow> out;
  for (auto it = builds.rbegin(); it != builds.rend() && static_cast<int>(out.size()) < limit;
       ++it) {
    if ((before_id == 0 || it->first < before_id) &&
        (filter.recipe_name.empty() || it->second.recipe_name == filter.recipe_name)) {
      out.push_back(it->second);
    }
  }
  return out;
}
Result<std::vector<store::JobRow>> InMemoryStore::ListJobs(int64_t build_id) {
  std::vector<store::JobRow> out;
  for (const auto& [id, job] : jobs) {
    if (job.build_id == build_id) out.push_back(job);
  }
  return out;
}
Result<std::map<int64_t, std::vector<store::JobRow>>> InMemoryStore::ListJobsOfBuilds(
    const std::vector<int64_t>&) {
  return Unused("ListJobsOfBuilds");
}
Result<store::JobRow> InMemoryStore::GetJob(int64_t id) {
  return Find(jobs, id, "job " + std::to_string(id));
}
Result<std::optional<store::JobRow>> InMemoryStore::FindSucceededJob(const std::string& key) {
  for (const auto& [id, job] : jobs) {
    if (job.build_key != key || job.state != store::kJobSucceeded) continue;
    for (const auto& [artifact_id, a] : artifacts) {
      if (a.job_id == id) return std::optional<store::JobRow>(job);
    }
  }
  return std::optional<store::JobRow>();
}
Result<std::vector<store::AttemptRow>> InMemoryStore::ListAttempts(int64_t job_id) {
  return attempts[job_id];
}
Result<std::map<int64_t, std::vector<store::AttemptRow>>> InMemoryStore::ListAttemptsOfJobs(
    const std::vector<int64_t>&) {
  return Unused("ListAttemptsOfJobs");
}
Result<std::map<int64_t, std::vector<store::ArtifactRow>>> InMemoryStore::ListArtifactsOfJobs(
    const std::vector<int64_t>& job_ids) {
  std::map<int64_t, std::vector<store::ArtifactRow>> out;
  for (const auto& [id, a] : artifacts) {
    if (std::find(job_ids.begin(), job_ids.end(), a.job_id) != job_ids.end()) {
      out[a.job_id].push_back(a);
    }
  }
  return out;
}
Result<std::vector<store::JobRow>> InMemoryStore::ListPendingJobs(int) {
  return Unused("ListPendingJobs");
}
Result<std::vector<store::JobRow>> InMemoryStore::GetJobs(const std::vector<int64_t>&) {
  return Unused("GetJobs");
}

Status InMemoryStore::CreateBuild(store::BuildRow* build, std::vector<store::JobRow>* rows) {
  store::BuildLinks none;
  return CreateBuildLinked(build, rows, &none);
}

Status InMemoryStore::CreateBuildLinked(store::BuildRow* build, std::vector<store::JobRow>* rows,
                                        store::BuildLinks* linked) {
  build->id = next_id_++;
  builds[build->id] = *build;
  for (store::JobRow& job : *rows) {
    job.id = next_id_++;
    job.build_id = build->id;
    if (job.reused_from > 0) job.state = store::kJobSucceeded;
    jobs[job.id] = job;
  }
  links.push_back(*linked);
  return Status::Ok();
}

Result<std::vector<int64_t>> InMemoryStore::ResolveMergedJobs(int64_t) {
  return Unused("ResolveMergedJobs");
}

Status InMemoryStore::RetryJob(int64_t job_id, int64_t) {
  auto it = jobs.find(job_id);
  if (it == jobs.end()) return Status::NotFound("no job " + std::to_string(job_id));
  if (it->second.state != store::kJobFailed && it->second.state != store::kJobCancelled) {
    return Status::FailedPrecondition("job " + std::to_string(job_id) + " has not ended badly");
  }
  it->second.state = store::kJobPending;
  return Status::Ok();
}

Status InMemoryStore::CancelBuild(int64_t build_id, int64_t, const std::string& who) {
  auto it = builds.find(build_id);
  if (it == builds.end()) return Status::NotFound("no build " + std::to_string(build_id));
  if (it->second.state >= store::kBuildSucceeded) {
    return Status::FailedPrecondition("build " + std::to_string(build_id) + " has ended");
  }
  it->second.state = store::kBuildCancelled;
  for (auto& [id, job] : jobs) {
    if (job.build_id != build_id || store::IsTerminal(job.state)) continue;
    job.state = store::kJobCancelled;
    job.cancelled_by = who;
  }
  return Status::Ok();
}

Result<std::optional<store::JobRow>> InMemoryStore::AcquireJob(const std::string&, int64_t, int64_t,
                                                               const store::PlacementFn&) {
  return Unused("AcquireJob");
}
Result<std::vector<int64_t>> InMemoryStore::ListLeasableJobIds(int64_t, int) {
  return Unused("ListLeasableJobIds");
}
Result<std::vector<std::optional<store::JobRow>>> InMemoryStore::LeaseJobs(
    const std::vector<store::LeaseRequest>&, int64_t, int64_t) {
  return Unused("LeaseJobs");
}
Result<std::vector<store::JobRow>> InMemoryStore::CancelRequestedJobs(
    const std::string& worker_id) {
  std::vector<store::JobRow> out;
  for (const auto& [id, job] : jobs) {
    if (job.state == store::kJobRunning && job.worker_id == worker_id && job.cancel_requested) {
      out.push_back(job);
    }
  }
  return out;
}
Result<std::vector<store::JobRow>> InMemoryStore::RenewLeases(const std::string& worker_id,
                                                              int64_t now_ms, int64_t lease_ms) {
  for (auto& [id, job] : jobs) {
    if (job.state == store::kJobRunning && job.worker_id == worker_id) {
      job.lease_expiry_ms = now_ms + lease_ms;
    }
  }
  return CancelRequestedJobs(worker_id);
}

Result<int> InMemoryStore::CompleteAttempt(const store::CompletionReport& report, int64_t) {
  auto it = jobs.find(report.job_id);
  if (it == jobs.end()) return Status::NotFound("no job " + std::to_string(report.job_id));
  completions.push_back(report);
  bool ok = report.cause == store::kCauseCompleted && report.exit_code == 0;
  it->second.state = ok ? store::kJobSucceeded : store::kJobFailed;
  for (const store::JobRow& queued : report.on_success) {
    if (ok) (void)QueueValidationJob(queued);
  }
  return static_cast<int>(it->second.state);
}

Result<std::vector<int64_t>> InMemoryStore::ExpireLeases(int64_t) { return Unused("ExpireLeases"); }
Status InMemoryStore::ExtendRunningLeases(int64_t, int64_t) {
  return Unused("ExtendRunningLeases");
}
Result<bool> InMemoryStore::ReattachAttempt(int64_t job_id, int attempt,
                                            const std::string& worker_id, int64_t now_ms,
                                            int64_t lease_ms) {
  auto it = jobs.find(job_id);
  // Requeued and not leased since: still pending at the attempt the worker runs, which
  // ended because this worker was taken for lost.
  if (it == jobs.end() || it->second.state != store::kJobPending || it->second.attempt != attempt ||
      it->second.cancel_requested) {
    return false;
  }
  bool lost = false;
  for (store::AttemptRow& a : attempts[job_id]) {
    if (a.number == attempt && a.worker_id == worker_id && a.cause == store::kCauseLostWorker) {
      a.cause = store::kCauseNone;
      lost = true;
    }
  }
  if (!lost) return false;
  it->second.state = store::kJobRunning;
  it->second.worker_id = worker_id;
  it->second.lease_expiry_ms = now_ms + lease_ms;
  return true;
}
Result<std::vector<int64_t>> InMemoryStore::ReleaseWorkerJobs(const std::string& worker_id,
                                                              const std::vector<int64_t>& keep,
                                                              const std::string& detail, int64_t) {
  std::vector<int64_t> released;
  for (auto& [id, job] : jobs) {
    if (job.state != store::kJobRunning || job.worker_id != worker_id) continue;
    if (std::find(keep.begin(), keep.end(), id) != keep.end()) continue;
    job.state = store::kJobPending;
    job.worker_id.clear();
    job.error = detail;
    released.push_back(id);
  }
  return released;
}
Result<bool> InMemoryStore::RecordProgress(const store::ProgressReport& report) {
  auto it = jobs.find(report.job_id);
  if (it == jobs.end() || it->second.state != store::kJobRunning ||
      it->second.attempt != report.attempt || it->second.worker_id != report.worker_id) {
    return false;
  }
  progress.push_back(report);
  return true;
}

Result<store::ArtifactRow> InMemoryStore::InsertArtifact(const store::ArtifactRow& artifact) {
  store::ArtifactRow row = artifact;
  row.id = next_id_++;
  artifacts[row.id] = row;
  return row;
}
Result<std::vector<store::ArtifactRow>> InMemoryStore::ListArtifacts(int64_t job_id) {
  std::vector<store::ArtifactRow> out;
  for (const auto& [id, a] : artifacts) {
    if (a.job_id == job_id) out.push_back(a);
  }
  return out;
}
Result<store::ArtifactRow> InMemoryStore::GetArtifact(int64_t id) {
  return Find(artifacts, id, "artifact " + std::to_string(id));
}

Result<store::JobRow> InMemoryStore::QueueValidationJob(const store::JobRow& job) {
  store::JobRow row = job;
  row.id = next_id_++;
  jobs[row.id] = row;
  return row;
}
Result<std::vector<store::JobRow>> InMemoryStore::ListValidationJobs(int64_t, int) {
  return Unused("ListValidationJobs");
}
Result<std::vector<store::ArtifactRow>> InMemoryStore::ListArtifactsInValidationState(int, int64_t,
                                                                                      int) {
  return Unused("ListArtifactsInValidationState");
}
Status InMemoryStore::SetArtifactValidationState(int64_t, int) {
  return Unused("SetArtifactValidationState");
}

Status InMemoryStore::UpsertWorker(const store::WorkerRow& worker) {
  workers[worker.id] = worker;
  return Status::Ok();
}
Result<store::WorkerRow> InMemoryStore::GetWorker(const std::string& id) {
  return Find(workers, id, "worker " + id);
}
Result<std::vector<store::WorkerRow>> InMemoryStore::ListWorkers() {
  std::vector<store::WorkerRow> out;
  for (const auto& [id, w] : workers) out.push_back(w);
  return out;
}
Status InMemoryStore::TouchWorker(const std::string& id, int64_t now_ms, store::WorkerState state) {
  auto it = workers.find(id);
  if (it == workers.end()) return Status::NotFound("no worker " + id);
  it->second.last_heartbeat_ms = now_ms;
  it->second.state = state;
  ++worker_touches;
  return Status::Ok();
}
Status InMemoryStore::SetDrainRequested(const std::string& id, bool drain) {
  auto it = workers.find(id);
  if (it == workers.end()) return Status::NotFound("no worker " + id);
  it->second.drain_requested = drain;
  return Status::Ok();
}
Result<int> InMemoryStore::CountRunningJobs(const std::string& worker_id) {
  FARM_ASSIGN_OR_RETURN(auto running, ListRunningJobs(worker_id));
  return static_cast<int>(running.size());
}
Result<std::vector<store::JobRow>> InMemoryStore::ListRunningJobs(const std::string& worker_id) {
  std::vector<store::JobRow> out;
  for (const auto& [id, job] : jobs) {
    if (job.state == store::kJobRunning && job.worker_id == worker_id) out.push_back(job);
  }
  return out;
}

Result<store::RecipeNameRow> InMemoryStore::ClaimRecipeName(const std::string& name,
                                                            const std::string& owner,
                                                            int64_t now_ms) {
  auto [it, fresh] = names.try_emplace(name, store::RecipeNameRow{name, owner, now_ms, now_ms});
  return it->second;
}
Result<std::optional<store::RecipeNameRow>> InMemoryStore::GetRecipeName(const std::string& name) {
  auto it = names.find(name);
  if (it == names.end()) return std::optional<store::RecipeNameRow>();
  return std::optional<store::RecipeNameRow>(it->second);
}
Result<std::vector<store::RecipeNameRow>> InMemoryStore::ListRecipeNames() {
  std::vector<store::RecipeNameRow> out;
  for (const auto& [name, row] : names) out.push_back(row);
  return out;
}
Result<store::RecipeNameRow> InMemoryStore::TransferRecipeName(const std::string&,
                                                               const std::string&, int64_t) {
  return Unused("TransferRecipeName");
}

Result<std::vector<int64_t>> InMemoryStore::ResolveHeldJobs(int64_t, const store::InputsKeyFn&) {
  ++held_resolutions;
  return std::vector<int64_t>{};
}
Result<std::vector<store::RequirementRow>> InMemoryStore::ListRequirements(int64_t) {
  return Unused("ListRequirements");
}
Result<std::vector<store::RequirementRow>> InMemoryStore::ListConsumers(int64_t) {
  return Unused("ListConsumers");
}
Result<std::vector<store::JobInputRow>> InMemoryStore::ListJobInputs(int64_t) {
  return Unused("ListJobInputs");
}
Result<std::set<int64_t>> InMemoryStore::JobsInGraph(const std::vector<int64_t>&) {
  return Unused("JobsInGraph");
}

Status InMemoryStore::PutLock(const store::LockRow& row) {
  lock_rows.emplace(row.digest, row);  // a digest holds one text: the first stays
  return Status::Ok();
}

Result<std::optional<store::LockRow>> InMemoryStore::GetLock(const std::string& digest) {
  auto it = lock_rows.find(digest);
  if (it == lock_rows.end()) return std::optional<store::LockRow>();
  return std::optional<store::LockRow>(it->second);
}

Status InMemoryStore::RecordSourceArchive(const store::SourceArchiveRow& row) {
  sources[row.sha256] = row;
  return Status::Ok();
}
Result<store::SourceArchiveRow> InMemoryStore::GetSourceArchive(const std::string& sha256) {
  return Find(sources, sha256, "source archive " + sha256);
}
Status InMemoryStore::TouchSourceArchive(const std::string& sha256, int64_t now_ms) {
  auto it = sources.find(sha256);
  if (it == sources.end()) return Status::NotFound("no source archive " + sha256);
  it->second.last_used_ms = now_ms;
  return Status::Ok();
}
Result<std::vector<store::SourceArchiveRow>> InMemoryStore::ListCollectableSources(int64_t, int) {
  return Unused("ListCollectableSources");
}
Result<bool> InMemoryStore::ForgetSourceArchive(const std::string&, int64_t) {
  return Unused("ForgetSourceArchive");
}

Status InMemoryStore::Together(const std::function<Status()>& calls) {
  ++visits;
  return calls();
}
Status InMemoryStore::TogetherInOneTransaction(const std::function<Status()>& calls) {
  ++visits;
  return calls();
}

}  // namespace farm::builds::testing
