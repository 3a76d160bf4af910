// ScheduleRunner's watch schedules: poll when due, fire once per upstream change.
#include <algorithm>

#include "common/log.h"
#include "common/upstream/release_version.h"
#include "daemon/cron/runner.h"

namespace farm::cron {
namespace {

constexpr size_t kMaxLabelsInDetail = 8;

std::string Describe(const std::vector<WatchItem>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxLabelsInDetail; ++i) {
    out += (i ? ", " : "") + items[i].label;
  }
  if (items.size() > kMaxLabelsInDetail) {
    out += " and " + std::to_string(items.size() - kMaxLabelsInDetail) + " more";
  }
  return out;
}

// The git item a watch builds when several are new at once: the newest tag by release
// order where the names parse as versions, else the last by name; a branch has one.
const WatchItem* GitPick(const std::vector<WatchItem>& fresh) {
  const WatchItem* best = nullptr;
  for (const WatchItem& item : fresh) {
    if (item.commit.empty()) continue;
    if (best == nullptr) {
      best = &item;
      continue;
    }
    auto a = upstream::ParseReleaseVersion(best->ref);
    auto b = upstream::ParseReleaseVersion(item.ref);
    bool newer = a && b ? upstream::CompareReleases(*b, *a) > 0 : item.ref > best->ref;
    if (newer) best = &item;
  }
  return best;
}

}  // namespace

Result<bool> ScheduleRunner::ProveInsteadOfBuild(const store::ScheduleRow& s, const FireRequest& f,
                                                 const std::vector<WatchItem>& fresh) {
  farm::v1::SubmitBuildRequest req;
  req.ParseFromString(s.request);
  auto proved = prover_->ProveNewTorches(req, fresh);
  if (!proved.ok()) {
    // Not built either (that would rebuild wheels that need only a proof): the change stays
    // unseen, its pages fetched again, and the next poll tries again.
    log::Warn("schedule " + std::to_string(s.id) + ": proving the stable-ABI wheels with " +
              Describe(fresh) + " failed: " + proved.status().ToString());
    WatchState retry = WatchState::Parse(s.watch_state);
    retry.etags.clear();
    FARM_RETURN_IF_ERROR(store_->SetWatchState(s.id, retry.Serialize(), f.next_fire_ms));
    return true;
  }
  if (!proved->covers_all) return false;
  std::string jobs;
  for (int64_t id : proved->job_ids) jobs += (jobs.empty() ? "" : ", ") + std::to_string(id);
  // Written with the watch state in one transaction; the jobs were queued under their own
  // keys before, so a farmd killed between the two queues nothing twice when it sees the
  // releases again.
  store::ScheduleRunRow run{.schedule_id = s.id,
                            .trigger = f.trigger,
                            .outcome = farm::v1::RUN_VALIDATION_ONLY,
                            .fire_ms = f.fire_ms,
                            .created_ms = f.fire_ms,
                            .detail = f.note + "; the stable-ABI wheels serve it: " +
                                      std::to_string(proved->job_ids.size()) +
                                      " validation-only job(s) (" + jobs + "), no build",
                            .upstream_ms = f.upstream_ms,
                            .watch_state = f.watch_state};
  FARM_RETURN_IF_ERROR(store_->RecordScheduleRun(&run, f.next_fire_ms));
  return true;
}

int64_t ScheduleRunner::PollPeriodMs(const farm::v1::UpstreamWatch& watch) const {
  return watch.poll_seconds() > 0 ? int64_t{watch.poll_seconds()} * 1000 : options_.default_poll_ms;
}

Result<bool> ScheduleRunner::PollIfDue(const store::ScheduleRow& s, int64_t now) {
  if (s.paused || s.next_fire_ms > now) return false;
  farm::v1::UpstreamWatch watch;
  farm::v1::SubmitBuildRequest req;
  if (!watch.ParseFromString(s.watch) || !req.ParseFromString(s.request)) {
    return Status::DataLoss("schedule " + std::to_string(s.id) + " is unreadable");
  }
  WatchState state = WatchState::Parse(s.watch_state);
  int64_t period = PollPeriodMs(watch);
  Result<PollResult> polled = Status::FailedPrecondition("this farmd polls no upstream");
  auto target = WatchTargetOf(req);
  if (!target.ok()) {
    polled = target.status();
  } else if (poller_ != nullptr) {
    polled = poller_->Poll(watch, *target, state);
  }
  if (!polled.ok()) return PollFailed(s, state, period, now, polled.status());
  std::vector<WatchItem> fresh = NewItems(*polled, state);
  FireRequest f{.trigger = farm::v1::TRIGGER_WATCH,
                .fire_ms = now,
                .next_fire_ms = now + period,
                .watch_state = AfterPoll(state, *polled).Serialize()};
  if (!state.primed) {
    FARM_RETURN_IF_ERROR(RecordFirstPoll(s, f, polled->items.size(), fresh));
    return true;
  }
  if (fresh.empty()) {
    FARM_RETURN_IF_ERROR(store_->SetWatchState(s.id, f.watch_state, f.next_fire_ms));
    return false;
  }
  DateChange(fresh, &f);
  if (watch.has_torch() && prover_ != nullptr) {
    FARM_ASSIGN_OR_RETURN(bool recorded, ProveInsteadOfBuild(s, f, fresh));
    if (recorded) return true;
  }
  FARM_RETURN_IF_ERROR(FireChange(s, state, period, fresh, f));
  return true;
}

Result<bool> ScheduleRunner::PollFailed(const store::ScheduleRow& s, const WatchState& state,
                                        int64_t period, int64_t now, const Status& why_failed) {
  // Recorded once per streak of failures; the backoff keeps a dead upstream quiet.
  WatchState failed = state;
  ++failed.failures;
  int64_t next = now + NextPollDelayMs(period, failed.failures);
  std::string why = "poll failed: " + why_failed.message();
  if (failed.failures == 1) {
    FireRequest f{.trigger = farm::v1::TRIGGER_WATCH, .fire_ms = now, .next_fire_ms = next};
    FARM_RETURN_IF_ERROR(Record(s, f, farm::v1::RUN_FAILED, why).status());
  }
  log::Warn("schedule " + std::to_string(s.id) + ": " + why + " (failure " +
            std::to_string(failed.failures) + " in a row)");
  FARM_RETURN_IF_ERROR(store_->SetWatchState(s.id, failed.Serialize(), next));
  return true;
}

// The first poll sets the baseline: what exists now is not news.
Status ScheduleRunner::RecordFirstPoll(const store::ScheduleRow& s, const FireRequest& f,
                                       size_t items, const std::vector<WatchItem>& fresh) {
  store::ScheduleRunRow run{.schedule_id = s.id,
                            .trigger = f.trigger,
                            .outcome = farm::v1::RUN_SKIPPED_UNCHANGED,
                            .fire_ms = f.fire_ms,
                            .created_ms = f.fire_ms,
                            .detail = "first poll: watching " + std::to_string(items) +
                                      " upstream item(s)" +
                                      (fresh.empty() ? "" : " (" + Describe(fresh) + ")") +
                                      "; what appears later fires a build",
                            .watch_state = f.watch_state};
  return store_->RecordScheduleRun(&run, f.next_fire_ms);
}

void ScheduleRunner::DateChange(const std::vector<WatchItem>& fresh, FireRequest* f) {
  f->note = "new upstream: " + Describe(fresh);
  f->upstream_ms = f->fire_ms;
  bool dated = false;
  for (const WatchItem& item : fresh) {
    if (item.upstream_ms > 0) f->upstream_ms = std::min(f->upstream_ms, item.upstream_ms);
    dated = dated || item.upstream_ms > 0;
  }
  if (!dated) {
    // release_to_wheel_seconds then counts from this poll, not from the release.
    f->note +=
        " (the upstream gives no upload time: its time is this poll's, when the watch "
        "first saw it)";
  }
}

Status ScheduleRunner::FireChange(const store::ScheduleRow& s, const WatchState& state,
                                  int64_t period, const std::vector<WatchItem>& fresh,
                                  FireRequest f) {
  if (const WatchItem* pick = GitPick(fresh)) {
    f.git_commit = pick->commit;
    f.note += "; building " + pick->label;
  }
  FARM_ASSIGN_OR_RETURN(store::ScheduleRunRow run, Fire(s, f));
  if (run.outcome == farm::v1::RUN_SUBMITTED) return Status::Ok();
  // Not built (the previous build still runs, the submit failed): the change stays unseen,
  // so a later poll fires it. Its pages must be fetched again for that. A refused submit
  // backs off as a failed poll does.
  WatchState retry = state;
  retry.etags.clear();
  int64_t next = f.next_fire_ms;
  if (run.outcome == farm::v1::RUN_FAILED) {
    ++retry.failures;
    next = f.fire_ms + NextPollDelayMs(period, retry.failures);
  }
  return store_->SetWatchState(s.id, retry.Serialize(), next);
}

}  // namespace farm::cron
