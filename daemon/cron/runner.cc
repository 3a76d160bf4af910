#include "daemon/cron/runner.h"

#include "common/log.h"
#include "daemon/cron/cron.h"

namespace farm::cron {
namespace {

constexpr int kMissedRunOnce = farm::v1::MISSED_RUN_ONCE;
constexpr int kConcurrencyAllow = farm::v1::CONCURRENCY_ALLOW;

std::string Short(const std::string& commit) { return commit.substr(0, 12); }

// Pins the git refs of the recipes `req` requires (recursively) to their commits now, so
// the digest and the build see the same graph. Local sources lose their client digest, as
// the requested recipe's does.
Status PinRequirements(SourceResolver* resolver, farm::v1::SubmitBuildRequest* req) {
  for (auto& sub : *req->mutable_requirements()) {
    if (sub.source().has_git() && !sub.source().git().ref().empty()) {
      auto* git = sub.mutable_source()->mutable_git();
      FARM_ASSIGN_OR_RETURN(std::string commit, resolver->ResolveGitRef(git->url(), git->ref()));
      git->set_commit(commit);
    } else if (!sub.source().has_git()) {
      sub.clear_source_digest();
    }
    FARM_RETURN_IF_ERROR(PinRequirements(resolver, &sub));
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> NextFireMs(const std::string& cron, const std::string& time_zone,
                           int64_t after_ms) {
  FARM_ASSIGN_OR_RETURN(CronExpr expr, CronExpr::Parse(cron));
  FARM_ASSIGN_OR_RETURN(TimeZone zone, TimeZone::Load(time_zone.empty() ? "UTC" : time_zone));
  int64_t after_s = after_ms >= 0 ? after_ms / 1000 : (after_ms - 999) / 1000;
  FARM_ASSIGN_OR_RETURN(int64_t next_s, expr.NextFire(zone, after_s));
  return next_s * 1000;
}

ScheduleRunner::ScheduleRunner(store::Store* store, const Clock* clock, SourceResolver* resolver,
                               BuildSubmitter* submitter, RunnerOptions options,
                               UpstreamPoller* poller)
    : store_(store),
      clock_(clock),
      resolver_(resolver),
      submitter_(submitter),
      options_(options),
      poller_(poller) {}

ScheduleRunner::~ScheduleRunner() { Stop(); }

Result<store::ScheduleRunRow> ScheduleRunner::Record(const store::ScheduleRow& schedule,
                                                     const FireRequest& f, int outcome,
                                                     const std::string& detail) {
  store::ScheduleRunRow run{.schedule_id = schedule.id,
                            .trigger = f.trigger,
                            .outcome = outcome,
                            .fire_ms = f.fire_ms,
                            .created_ms = clock_->NowUnixMs(),
                            .detail = f.note.empty() ? detail : f.note + "; " + detail};
  FARM_RETURN_IF_ERROR(store_->RecordScheduleRun(&run, f.next_fire_ms));
  log::Info("schedule " + std::to_string(schedule.id) + ": " + run.detail);
  return run;
}

Result<store::ScheduleRunRow> ScheduleRunner::Fire(const store::ScheduleRow& schedule,
                                                   const FireRequest& f) {
  if (schedule.concurrency_policy != kConcurrencyAllow) {
    FARM_ASSIGN_OR_RETURN(int64_t active, store_->ActiveScheduleBuild(schedule.id));
    if (active > 0) {
      return Record(schedule, f, farm::v1::RUN_SKIPPED_RUNNING,
                    "build " + std::to_string(active) + " of a previous run is still going");
    }
  }
  farm::v1::SubmitBuildRequest req;
  if (!req.ParseFromString(schedule.request)) {
    return Record(schedule, f, farm::v1::RUN_FAILED, "the stored request is unreadable");
  }
  std::string commit;
  if (req.source().has_git()) {
    if (!f.git_commit.empty()) {
      // A git watch saw this commit: build exactly it, not what the ref says by now.
      req.mutable_source()->mutable_git()->set_commit(f.git_commit);
      req.mutable_source()->mutable_git()->clear_ref();
    }
    const farm::v1::GitSource& git = req.source().git();
    commit = git.commit();
    if (!git.ref().empty()) {
      auto resolved = resolver_->ResolveGitRef(git.url(), git.ref());
      if (!resolved.ok()) {
        return Record(schedule, f, farm::v1::RUN_FAILED,
                      "cannot resolve " + git.ref() + ": " + resolved.status().message());
      }
      commit = resolved.value();
      req.mutable_source()->mutable_git()->set_commit(commit);
    }
  } else {
    // farmd cannot read a local directory or tarball, so the digest taken when the
    // schedule was created says nothing about today's content: build it, never reuse.
    req.clear_source_digest();
  }
  // A torch watch that follows release candidates builds them: its axis reads the
  // pre-release indexes too, whatever fired it (a new release, run-now, its cron).
  if (farm::v1::UpstreamWatch watch;
      watch.ParseFromString(schedule.watch) && watch.torch().release_candidates()) {
    req.set_follow_release_candidates(true);
  }
  if (Status pinned = PinRequirements(resolver_, &req); !pinned.ok()) {
    return Record(schedule, f, farm::v1::RUN_FAILED,
                  "cannot resolve a required recipe's ref: " + pinned.message());
  }
  std::string digest = submitter_->InputsDigest(req);
  // A watch fires because its upstream changed, which the request's inputs do not show.
  if (!f.force && !digest.empty() && f.trigger != farm::v1::TRIGGER_WATCH) {
    FARM_ASSIGN_OR_RETURN(auto last, store_->LastSucceededScheduleRun(schedule.id));
    if (last && last->inputs_digest == digest) {
      store::ScheduleRunRow skipped;
      FARM_ASSIGN_OR_RETURN(
          skipped, Record(schedule, f, farm::v1::RUN_SKIPPED_UNCHANGED,
                          "inputs unchanged since run " + std::to_string(last->id) + " (build " +
                              std::to_string(last->build_id) +
                              (commit.empty() ? "" : ", commit " + Short(commit)) + ")"));
      return skipped;
    }
  }
  store::ScheduleRunRow run{.schedule_id = schedule.id,
                            .trigger = f.trigger,
                            .outcome = farm::v1::RUN_SUBMITTED,
                            .fire_ms = f.fire_ms,
                            .created_ms = clock_->NowUnixMs(),
                            .resolved_commit = commit,
                            .inputs_digest = digest,
                            .detail = f.note,
                            .upstream_ms = f.upstream_ms,
                            .watch_state = f.watch_state};
  if (f.force) req.set_force(true);
  // The creator owns the schedule, so its builds are the creator's (docs/security.md).
  auto build = submitter_->SubmitScheduled(req, schedule.created_by, &run, f.next_fire_ms);
  if (!build.ok()) {
    return Record(schedule, f, farm::v1::RUN_FAILED, "submit failed: " + build.status().message());
  }
  log::Info("schedule " + std::to_string(schedule.id) + " submitted build " +
            std::to_string(build.value()) + (commit.empty() ? "" : " at commit " + Short(commit)));
  return run;
}

Result<bool> ScheduleRunner::FireIfDue(const store::ScheduleRow& s, int64_t now) {
  if (s.paused || s.next_fire_ms > now) return false;
  FARM_ASSIGN_OR_RETURN(CronExpr expr, CronExpr::Parse(s.cron));
  FARM_ASSIGN_OR_RETURN(TimeZone zone, TimeZone::Load(s.time_zone.empty() ? "UTC" : s.time_zone));
  FARM_ASSIGN_OR_RETURN(int64_t next_s, expr.NextFire(zone, now / 1000));
  FireRequest f{
      .trigger = farm::v1::TRIGGER_CRON, .fire_ms = s.next_fire_ms, .next_fire_ms = next_s * 1000};
  if (now - s.next_fire_ms <= options_.missed_grace_ms) {
    FARM_RETURN_IF_ERROR(Fire(s, f).status());
    return true;
  }
  // Missed while farmd was down: count the fire times (bounded: ~70 days of minutes).
  int64_t last_s = s.next_fire_ms / 1000;
  int count = 1;
  for (int i = 0; i < 100000; ++i, ++count) {
    FARM_ASSIGN_OR_RETURN(int64_t t, expr.NextFire(zone, last_s));
    if (t * 1000 > now) break;
    last_s = t;
  }
  std::string missed = std::to_string(count) + " fire time(s) missed while farmd was down (" +
                       FormatRfc3339(s.next_fire_ms) +
                       (count > 1 ? " to " + FormatRfc3339(last_s * 1000) : "") + ")";
  f.fire_ms = last_s * 1000;
  if (s.missed_policy != kMissedRunOnce) {
    FARM_RETURN_IF_ERROR(
        Record(s, f, farm::v1::RUN_SKIPPED_MISSED, missed + ", policy skip").status());
    return true;
  }
  f.trigger = farm::v1::TRIGGER_CATCH_UP;
  f.note = missed + ", policy run_once";
  FARM_RETURN_IF_ERROR(Fire(s, f).status());
  return true;
}

Result<int> ScheduleRunner::Tick() {
  std::lock_guard lock(fire_mu_);
  FARM_ASSIGN_OR_RETURN(auto schedules, store_->ListSchedules());
  int64_t now = clock_->NowUnixMs();
  int fired = 0;
  for (const auto& s : schedules) {
    auto due = s.watch.empty() ? FireIfDue(s, now) : PollIfDue(s, now);
    if (!due.ok()) {
      log::Warn("schedule " + std::to_string(s.id) + " could not fire: " + due.status().ToString());
      continue;
    }
    fired += due.value() ? 1 : 0;
  }
  return fired;
}

Result<store::ScheduleRunRow> ScheduleRunner::RunNow(int64_t id, bool force) {
  std::lock_guard lock(fire_mu_);
  FARM_ASSIGN_OR_RETURN(store::ScheduleRow s, store_->GetSchedule(id));
  FireRequest f{.trigger = farm::v1::TRIGGER_MANUAL,
                .fire_ms = clock_->NowUnixMs(),
                .next_fire_ms = -1,
                .force = force,
                .note = force ? "run now, forced" : ""};
  return Fire(s, f);
}

void ScheduleRunner::Start(int64_t period_ms) {
  thread_ = std::thread([this, period_ms] {
    for (;;) {
      {
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, std::chrono::milliseconds(period_ms),
                         [this] { return stopping_; })) {
          return;
        }
      }
      try {
        auto fired = Tick();
        if (!fired.ok()) log::Warn("schedule tick failed: " + fired.status().ToString());
      } catch (const std::exception& e) {
        log::Error(std::string("schedule tick threw: ") + e.what());
      }
    }
  });
}

void ScheduleRunner::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace farm::cron
