#include "worker/attempt/job_runner.h"

#include <utility>

#include "common/fs.h"
#include "common/log.h"
#include "common/utf8.h"
#include "worker/attempt/build_attempt.h"
#include "worker/attempt/validation_attempt.h"
#include "worker/client/retry.h"

namespace farm::agent {
namespace {

// The job log's lines go to farmd through the worker's client.
class FarmLogSink final : public LogSink {
 public:
  explicit FarmLogSink(FarmClient& client) : client_(client) {}
  Result<int64_t> Send(int64_t job_id, int32_t attempt,
                       const std::vector<farm::v1::LogLine>& lines) override {
    return client_.UploadLog(job_id, attempt, lines);
  }

 private:
  FarmClient& client_;
};

std::string JobName(const farm::v1::JobAssignment& job) {
  return "job " + std::to_string(job.job_id()) + " attempt " + std::to_string(job.attempt());
}

}  // namespace

JobRunner::JobRunner(JobDeps deps, JobSettings settings, farm::v1::JobAssignment job,
                     std::shared_ptr<JobControl> control)
    : ctx_(std::move(deps), std::move(settings), std::move(job), std::move(control)) {}

Outcome JobRunner::Run() {
  const farm::v1::JobAssignment& job = ctx_.job();
  const JobSettings& settings = ctx_.settings();
  JobControl& control = ctx_.control();
  FarmLogSink sink(*ctx_.deps().client);
  LogShipperOptions log_options;
  log_options.max_buffered_bytes = static_cast<size_t>(settings.log_buffer_bytes);
  log_options.published_seq = &control.log_seq;  // every line, build output included
  LogShipper log(sink, *ctx_.deps().clock, job.job_id(), job.attempt(), log_options);
  log.Start();
  log::Info("starting " + JobName(job) + " of build " + std::to_string(job.build_id()));
  Outcome outcome;
  std::string ws;
  auto made = fs::MakeTempDir(settings.work_dir, "job-" + std::to_string(job.job_id()) + "-a" +
                                                     std::to_string(job.attempt()) + "-");
  if (!made.ok()) {
    outcome = Infra("cannot create workspace: " + made.status().message());
  } else if (Status given = sandbox::GiveToBuildUser(settings.build_user, *made, false);
             !given.ok()) {
    ws = *made;
    outcome = Infra(given.message());
  } else {
    ws = *made;
    outcome = Execute(log, ws);
  }
  if (control.stopped() && outcome.cause != control.cause()) outcome = ctx_.StoppedOutcome(outcome);
  log.Append(farm::v1::SYSTEM,
             "farm: attempt ended: " + farm::v1::AttemptCause_Name(outcome.cause) +
                 (outcome.detail.empty() ? "" : " (" + outcome.detail + ")"));
  Status flushed = log.Finish(ctx_.RetryDeadlineMs(60000));
  if (!flushed.ok()) log::Warn(JobName(job) + ": log upload incomplete: " + flushed.ToString());
  Report(outcome, log.last_seq());
  if (!ws.empty() && !settings.keep_workspace) {
    for (const std::string& dir : {ws, ctx_.OutputDir(ws)}) {
      Status removed = fs::RemoveAll(dir);
      if (!removed.ok()) log::Warn("removing workspace: " + removed.ToString());
    }
  }
  return outcome;
}

Outcome JobRunner::Execute(LogShipper& log, const std::string& ws) {
  auto system = [&log](const std::string& text) { log.Append(farm::v1::SYSTEM, "farm: " + text); };
  system("workspace " + ws);
  for (const std::string& line : ctx_.job().cell_settings()) system("cell settings: " + line);
  if (ctx_.job().kind() == farm::v1::JOB_VALIDATE) return ValidationAttempt(ctx_).Run(log, ws);
  return BuildAttempt(ctx_).Run(log, ws);
}

void JobRunner::Report(const Outcome& outcome, int64_t last_seq) {
  const farm::v1::JobAssignment& job = ctx_.job();
  FarmClient* client = ctx_.deps().client;
  farm::v1::CompleteJobRequest req;
  req.set_job_id(job.job_id());
  req.set_attempt(job.attempt());
  req.set_exit_code(outcome.exit_code);
  req.set_cause(outcome.cause);
  req.set_detail(ToValidUtf8(outcome.detail));  // may quote file names or output
  req.set_peak_rss_bytes(outcome.peak_rss_bytes);
  req.set_last_log_seq(last_seq);
  *req.mutable_validation() = outcome.validation;
  if (outcome.compile_cache) *req.mutable_compile_cache() = *outcome.compile_cache;
  auto done = RetryUnavailable(*ctx_.deps().clock, ctx_.RetryDeadlineMs(kReportRetryMs), client,
                               [&] { return client->CompleteJob(req); });
  std::string what = JobName(job) + " ended " + farm::v1::AttemptCause_Name(outcome.cause) +
                     (outcome.detail.empty() ? "" : " (" + outcome.detail + ")");
  if (done.ok()) {
    ctx_.control().reported = true;
    log::Info(what + "; farmd says " + farm::v1::JobState_Name(done->state()));
  } else {
    log::Warn(what + "; reporting it failed: " + done.status().ToString());
  }
}

}  // namespace farm::agent
