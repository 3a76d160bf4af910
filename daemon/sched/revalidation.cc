#include "daemon/sched/revalidation.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/log.h"
#include "daemon/model/convert.h"
#include "daemon/sched/peers.h"
#include "daemon/sched/placement.h"

namespace farm::sched {
namespace {

using model::ParseBlob;

constexpr int kPage = 500;
constexpr int kMaxPages = 200;

bool IsOpen(const store::JobRow& job) {
  return job.state == store::kJobPending || job.state == store::kJobRunning;
}

// The compute capabilities every wheel with device code of `artifacts` runs on; empty when
// none has device code (any GPU serves them).
std::vector<std::string> CommonRunsOn(const std::vector<store::ArtifactRow>& artifacts) {
  std::vector<std::string> common;
  bool first = true;
  for (const auto& a : artifacts) {
    auto manifest = ParseBlob<farm::v1::ArchManifest>(a.manifest);
    if (manifest.images_size() == 0) continue;
    std::vector<std::string> ccs(manifest.runs_on().begin(), manifest.runs_on().end());
    if (first) {
      common = ccs;
      first = false;
    } else {
      std::erase_if(common, [&](const std::string& cc) {
        return std::find(ccs.begin(), ccs.end(), cc) == ccs.end();
      });
    }
  }
  return common;
}

std::string JobName(const store::JobRow& job) {
  return "job " + std::to_string(job.id) + " attempt " + std::to_string(job.attempt);
}

// True when some peer has a GPU of `runs_on` (any GPU when it is empty): the cheap test
// that keeps wheels no registered GPU serves from costing queries on every pass.
bool SomePeerHasGpu(const std::vector<PeerWorker>& peers, const std::vector<std::string>& runs_on) {
  for (const auto& peer : peers) {
    for (const auto& gpu : peer.caps.gpus()) {
      std::string cc = std::to_string(gpu.cc_major()) + "." + std::to_string(gpu.cc_minor());
      if (runs_on.empty() || std::find(runs_on.begin(), runs_on.end(), cc) != runs_on.end()) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

Result<store::JobRow> ValidationJobFor(store::Store& store, const store::JobRow& job, int attempt,
                                       int64_t now_ms, int max_attempts) {
  FARM_ASSIGN_OR_RETURN(auto all, store.ListArtifacts(job.id));
  std::vector<store::ArtifactRow> artifacts;
  for (const auto& a : all) {
    if (a.attempt == attempt) artifacts.push_back(a);
  }
  farm::v1::JobNeeds needs;
  for (std::string& cc : CommonRunsOn(artifacts)) needs.add_gpu_ccs(std::move(cc));
  // A provisioned cell is validated in its environment, which a provisioning worker makes:
  // the build's own lock, whatever upstream did since.
  const auto built = ParseBlob<farm::v1::JobNeeds>(job.needs);
  needs.set_provisioned(built.provisioned());
  needs.set_lock_digest(built.lock_digest());
  return store::JobRow{.build_id = job.build_id,
                       .cell = job.cell,
                       .priority = job.priority,
                       .max_attempts = max_attempts,
                       .created_ms = now_ms,
                       .kind = store::kJobValidate,
                       .target_job_id = job.id,
                       .target_attempt = attempt,
                       .needs = needs.SerializeAsString()};
}

Result<store::JobRow> QueueValidation(store::Store& store, const Clock& clock, int64_t artifact_id,
                                      int max_attempts) {
  FARM_ASSIGN_OR_RETURN(store::ArtifactRow artifact, store.GetArtifact(artifact_id));
  FARM_ASSIGN_OR_RETURN(store::JobRow job, store.GetJob(artifact.job_id));
  std::string which =
      "artifact " + std::to_string(artifact_id) + " (job " + std::to_string(job.id) + ")";
  if (job.state != store::kJobSucceeded) {
    return Status::FailedPrecondition(which +
                                      " did not succeed: only wheels of succeeded build "
                                      "jobs are validated again (farmctl retry builds it again)");
  }
  if (artifact.attempt != job.attempt && artifact.attempt != 0) {
    return Status::FailedPrecondition(which + " is from attempt " +
                                      std::to_string(artifact.attempt) +
                                      ", which does not count; the job's wheels are attempt " +
                                      std::to_string(job.attempt) + "'s");
  }
  FARM_ASSIGN_OR_RETURN(store::JobRow row, ValidationJobFor(store, job, artifact.attempt,
                                                            clock.NowUnixMs(), max_attempts));
  return store.QueueValidationJob(row);
}

Status Revalidator::RecordUnknownStates() {
  for (int page = 0; page < kMaxPages; ++page) {
    FARM_ASSIGN_OR_RETURN(
        auto rows, store_->ListArtifactsInValidationState(store::kValidationUnknown, 0, kPage));
    for (const auto& a : rows) {
      auto report = ParseBlob<farm::v1::ValidationReport>(a.validation);
      FARM_RETURN_IF_ERROR(store_->SetArtifactValidationState(a.id, report.state()));
    }
    if (static_cast<int>(rows.size()) < kPage) break;
  }
  return Status::Ok();
}

Result<int> Revalidator::RunOnce() {
  int64_t generation = store_->Generation();
  if (generation == seen_generation_) return 0;
  seen_generation_ = generation;
  FARM_RETURN_IF_ERROR(RecordUnknownStates());
  FARM_ASSIGN_OR_RETURN(auto workers, store_->ListWorkers());
  std::vector<PeerWorker> peers = PeersOf(workers);
  if (peers.empty()) return 0;
  // Attempts whose wheels wait for hardware, with their wheels' common runs-on. Copies
  // (attempt 0) follow the attempt they were copied from.
  std::map<std::pair<int64_t, int>, std::vector<store::ArtifactRow>> waiting;
  int64_t after = 0;
  for (int page = 0; page < kMaxPages; ++page) {
    FARM_ASSIGN_OR_RETURN(auto rows, store_->ListArtifactsInValidationState(
                                         store::kValidationPendingHardware, after, kPage));
    for (auto& a : rows) {
      after = a.id;
      if (a.attempt > 0) waiting[{a.job_id, a.attempt}].push_back(std::move(a));
    }
    if (static_cast<int>(rows.size()) < kPage) break;
  }
  int queued = 0;
  for (const auto& [target, artifacts] : waiting) {
    if (!SomePeerHasGpu(peers, CommonRunsOn(artifacts))) continue;
    FARM_ASSIGN_OR_RETURN(store::JobRow job, store_->GetJob(target.first));
    if (job.kind != store::kJobBuild || job.state != store::kJobSucceeded ||
        job.attempt != target.second) {
      continue;
    }
    FARM_ASSIGN_OR_RETURN(auto earlier, store_->ListValidationJobs(target.first, target.second));
    // Only those in the wheels' own cell: a stable-ABI wheel's validations in its other
    // torches (fanout.h) do not stand for it.
    std::erase_if(earlier, [&job](const store::JobRow& v) { return v.cell != job.cell; });
    if (std::any_of(earlier.begin(), earlier.end(), IsOpen)) continue;
    std::set<std::string> tried;
    for (const auto& v : earlier) {
      FARM_ASSIGN_OR_RETURN(auto attempts, store_->ListAttempts(v.id));
      for (const auto& a : attempts) tried.insert(a.worker_id);
    }
    FARM_ASSIGN_OR_RETURN(store::JobRow row, ValidationJobFor(*store_, job, target.second,
                                                              clock_->NowUnixMs(), max_attempts_));
    auto needs = ParseBlob<farm::v1::JobNeeds>(row.needs);
    for (const auto& id : tried) needs.add_exclude_workers(id);
    row.needs = needs.SerializeAsString();
    auto cell = ParseBlob<farm::v1::MatrixCell>(job.cell);
    auto taker = std::find_if(peers.begin(), peers.end(), [&](const PeerWorker& p) {
      return ValidationBlocker(cell, needs, p.caps, p.id).empty();
    });
    if (taker == peers.end()) continue;
    FARM_ASSIGN_OR_RETURN(store::JobRow stored, store_->QueueValidationJob(row));
    ++queued;
    log::Info("queued validation job " + std::to_string(stored.id) + " for the wheels of " +
              JobName(job) + ": " + taker->name + " has a GPU they run on");
  }
  return queued;
}

}  // namespace farm::sched
