#include "daemon/builds/completion.h"

#include "common/log.h"
#include "daemon/sched/fanout.h"
#include "daemon/sched/retry.h"

namespace farm::builds {

Status CheckHolds(store::BuildReader& builds, const std::string& worker_id, int64_t job_id,
                  int attempt) {
  FARM_ASSIGN_OR_RETURN(auto attempts, builds.ListAttempts(job_id));
  for (const auto& a : attempts) {
    if (a.number == attempt) {
      if (a.worker_id == worker_id) return Status::Ok();
      break;
    }
  }
  return Status::PermissionDenied("worker " + worker_id + " does not hold attempt " +
                                  std::to_string(attempt) + " of job " + std::to_string(job_id));
}

Result<store::CompletionReport> Completer::Report(const std::string& worker_id,
                                                  const farm::v1::CompleteJobRequest& req,
                                                  const store::JobRow& job, int64_t now) {
  FARM_ASSIGN_OR_RETURN(LeasedBuild build, deps_.recipes->Get(job.build_id));
  const farm::v1::Recipe& recipe = build.recipe;
  store::CompletionReport report{
      .job_id = req.job_id(),
      .attempt = req.attempt(),
      .worker_id = worker_id,
      .cause = static_cast<int>(req.cause()),
      .exit_code = req.exit_code(),
      .detail = req.detail(),
      .peak_rss_bytes = req.peak_rss_bytes(),
      .retry_build_failures = recipe.retry().retry_build_failures(),
      .validation = req.has_validation() ? req.validation().SerializeAsString() : "",
      .validation_state = req.validation().state(),
      .cache_hits = req.has_compile_cache() ? req.compile_cache().hits() : -1,
      .cache_misses = req.has_compile_cache() ? req.compile_cache().misses() : -1};
  const bool built = report.cause == store::kCauseCompleted && report.exit_code == 0 &&
                     job.kind == store::kJobBuild;
  if (built) {
    FARM_ASSIGN_OR_RETURN(auto artifacts, deps_.artifacts->ListArtifacts(req.job_id()));
    bool any = false;
    for (const auto& a : artifacts) any |= a.attempt == req.attempt();
    if (!any) {
      report.cause = store::kCauseBuildFailed;
      report.detail = "the attempt reported success but uploaded no wheel";
    }
  }
  if (report.cause == store::kCauseCompleted && built) {
    // A stable-ABI build's validations in its other torches, queued with its success.
    FARM_ASSIGN_OR_RETURN(
        report.on_success,
        sched::FanoutValidations(*deps_.artifacts, job, req.attempt(), now, job.max_attempts));
  } else if (job.kind == store::kJobValidate) {
    FARM_ASSIGN_OR_RETURN(store::JobRow target, deps_.builds->GetJob(job.target_job_id));
    if (sched::IsFanoutValidation(job, target)) {
      sched::FanoutOutcome(req.validation(), &report.cause, &report.detail);
    }
  }
  // When a failed attempt runs again (sched/retry.h): infrastructure failures back off
  // longer and get more attempts than the recipe's own.
  sched::RetryPlan retry = sched::PlanRetry(report.cause, req.attempt(), job.max_attempts,
                                            recipe.retry().backoff_seconds(), now);
  report.max_attempts = retry.max_attempts;
  report.retry_not_before_ms = retry.not_before_ms;
  return report;
}

Result<int> Completer::Complete(const std::string& worker_id,
                                const farm::v1::CompleteJobRequest& req, Status* release_error) {
  FARM_RETURN_IF_ERROR(CheckHolds(*deps_.builds, worker_id, req.job_id(), req.attempt()));
  FARM_ASSIGN_OR_RETURN(store::JobRow job, deps_.builds->GetJob(req.job_id()));
  int64_t now = deps_.clock->NowUnixMs();
  FARM_ASSIGN_OR_RETURN(store::CompletionReport report, Report(worker_id, req, job, now));
  FARM_ASSIGN_OR_RETURN(int state, deps_.leases->CompleteAttempt(report, now));
  if (deps_.sign_validation && req.has_validation()) {
    Status signed_ = deps_.sign_validation(job, req.attempt(), req.validation(), worker_id);
    if (!signed_.ok()) {
      log::Error("signing the validation of job " + std::to_string(job.id) + ": " +
                 signed_.ToString());
    }
  }
  if (store::IsTerminal(state)) {  // jobs waiting for this one's wheel go on at once
    auto released = deps_.graph->ResolveHeldJobs(now, deps_.inputs_key);
    if (!released.ok()) *release_error = released.status();
  }
  return state;
}

}  // namespace farm::builds
