#include "daemon/builds/control.h"

#include <vector>

#include "common/log.h"
#include "daemon/auth/ownership.h"
#include "daemon/builds/audited.h"
#include "daemon/sched/revalidation.h"

namespace farm::builds {

Status Control::CancelBuild(const Principal& who, int64_t build_id) {
  audit::Entry entry{audit::Action::kBuildCancel, "build " + std::to_string(build_id)};
  return AuditedAs(deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Status {
    FARM_RETURN_IF_ERROR(auth::MayChangeBuild(*deps_.builds, who, build_id));
    FARM_RETURN_IF_ERROR(deps_.control->CancelBuild(build_id, deps_.clock->NowUnixMs(), who.name));
    log::Info("build " + std::to_string(build_id) + " cancelled by " + who.name);
    return Status::Ok();
  });
}

Status Control::RetryJob(const Principal& who, int64_t job_id) {
  audit::Entry entry{audit::Action::kJobRetry, "job " + std::to_string(job_id)};
  return AuditedAs(deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Status {
    FARM_RETURN_IF_ERROR(auth::MayChangeJob(*deps_.builds, *deps_.names, who, job_id));
    FARM_RETURN_IF_ERROR(deps_.control->RetryJob(job_id, deps_.clock->NowUnixMs()));
    log::Info("job " + std::to_string(job_id) + " retried by " + who.name);
    return Status::Ok();
  });
}

Result<std::string> Control::DrainWorker(const Principal& who, const std::string& id_or_name,
                                         bool drain) {
  audit::Entry entry{drain ? audit::Action::kWorkerDrain : audit::Action::kWorkerUndrain,
                     "worker " + id_or_name};
  return AuditedAs(deps_.audit, who, auth::Need::kAdmin, entry, [&]() -> Result<std::string> {
    FARM_ASSIGN_OR_RETURN(std::string id, ResolveWorker(id_or_name));
    FARM_RETURN_IF_ERROR(deps_.workers->SetDrainRequested(id, drain));
    log::Info("worker " + id + (drain ? " drained by " : " undrained by ") + who.name);
    return id;
  });
}

Result<store::JobRow> Control::RevalidateArtifact(const Principal& who, int64_t artifact_id) {
  audit::Entry entry{audit::Action::kArtifactValidate, "artifact " + std::to_string(artifact_id)};
  return AuditedAs(deps_.audit, who, auth::Need::kSubmitter, entry, [&]() -> Result<store::JobRow> {
    FARM_RETURN_IF_ERROR(
        auth::MayChangeArtifact(*deps_.artifacts, *deps_.builds, *deps_.names, who, artifact_id));
    FARM_ASSIGN_OR_RETURN(store::ArtifactRow artifact, deps_.artifacts->GetArtifact(artifact_id));
    FARM_ASSIGN_OR_RETURN(store::JobRow job, deps_.builds->GetJob(artifact.job_id));
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
    FARM_ASSIGN_OR_RETURN(store::JobRow row,
                          sched::ValidationJobFor(*deps_.artifacts, job, artifact.attempt,
                                                  deps_.clock->NowUnixMs(), deps_.max_attempts));
    FARM_ASSIGN_OR_RETURN(store::JobRow queued, deps_.validations->QueueValidationJob(row));
    entry.done = "job " + std::to_string(queued.id);
    log::Info("validation of artifact " + std::to_string(artifact_id) + " asked by " + who.name +
              ": job " + std::to_string(queued.id));
    return queued;
  });
}

Result<std::string> Control::ResolveWorker(const std::string& id_or_name) {
  FARM_ASSIGN_OR_RETURN(auto workers, deps_.workers->ListWorkers());
  std::vector<std::string> named;
  for (const auto& w : workers) {
    if (w.id == id_or_name) return w.id;
    if (w.name == id_or_name) named.push_back(w.id);
  }
  if (named.size() == 1) return named[0];
  if (named.empty()) return Status::NotFound("no worker with id or name \"" + id_or_name + "\"");
  return Status::InvalidArgument(std::to_string(named.size()) + " workers are named \"" +
                                 id_or_name + "\"; give the id");
}

}  // namespace farm::builds
