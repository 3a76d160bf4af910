// ScheduleRunner: fires stored schedules when their cron time comes, or, for a schedule
// with an upstream watch, when its poll sees something new upstream (upstream_watch.h).
// Each firing is recorded as a schedule run: a submitted build, or the reason nothing was
// built (inputs unchanged since the last successful run, previous run still going, missed
// while farmd was down, branch unresolvable). A watch's first poll records what it sees
// and builds nothing; later, each poll that sees new items fires one build and records
// them as seen in the same transaction, so a change fires once across crashes.
//
//   ScheduleRunner runner(store, clock, resolver, submitter);
//   runner.Start(1000);           // a thread calls Tick() every second
//   runner.RunNow(id, false);     // farmctl schedules run-now
//   runner.Stop();
//
// A fire time found more than `missed_grace_ms` in the past was missed (farmd was down):
// MISSED_SKIP records one skipped run naming the missed times, MISSED_RUN_ONCE runs once.
//
// Thread-safety: Tick and RunNow may be called from any thread; firings are serialized so
// a schedule never fires twice at once. The store, clock, resolver and submitter must
// outlive the runner.
#ifndef FARM_DAEMON_CRON_RUNNER_H_
#define FARM_DAEMON_CRON_RUNNER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/cron/source_resolver.h"
#include "daemon/cron/upstream_watch.h"
#include "daemon/store/store.h"
#include "farm/v1/client.pb.h"

namespace farm::cron {

// Submits the build of a schedule run; farmd's API layer implements it with the same code
// path as SubmitBuild, so a run's build gets build keys, reuse and in-flight merging.
class BuildSubmitter {
 public:
  virtual ~BuildSubmitter() = default;
  // Stores the build of `req` submitted by `who` (the schedule's creator, who owns it and
  // acts with the role its tokens have now) together with `run` (its build_id set) and
  // the schedule's next fire time when next_fire_ms >= 0, in one transaction.
  // On success returns the build id.
  virtual Result<int64_t> SubmitScheduled(const farm::v1::SubmitBuildRequest& req,
                                          const std::string& who, store::ScheduleRunRow* run,
                                          int64_t next_fire_ms) = 0;
  // A digest of every input of a scheduled build's request; "" when a source is unknown,
  // so that such a schedule always builds. A run whose digest equals the last successful
  // run's builds nothing (daemon/builds/build_key.h, ScheduleInputsDigest).
  virtual std::string InputsDigest(const farm::v1::SubmitBuildRequest& req) const = 0;
};

// Proves, with torch releases a watch saw, the stable-ABI wheels its schedule's recipe
// already has, by validation-only jobs (daemon/builds/new_torch.h implements it).
class TorchProver {
 public:
  struct Outcome {
    std::vector<int64_t> job_ids;  // the validation jobs of these releases, new or earlier
    int queued = 0;                // how many of them this call stored
    // Every release has a wheel proven with it: the schedule builds nothing.
    bool covers_all = false;
  };
  virtual ~TorchProver() = default;
  // Queues, once per wheel and cell (a key in the store), a validation job of each
  // stable-ABI wheel of `req`'s recipe whose floor admits a release of `torches` (torch
  // watch items), in an environment of that release.
  virtual Result<Outcome> ProveNewTorches(const farm::v1::SubmitBuildRequest& req,
                                          const std::vector<WatchItem>& torches) = 0;
};

struct RunnerOptions {
  int64_t missed_grace_ms = 60000;   // a fire time later than this was missed
  int64_t default_poll_ms = 600000;  // a watch without poll_seconds
};

class ScheduleRunner {
 public:
  // `poller` null: watch schedules record that this farmd polls no upstream.
  ScheduleRunner(store::Store* store, const Clock* clock, SourceResolver* resolver,
                 BuildSubmitter* submitter, RunnerOptions options = {},
                 UpstreamPoller* poller = nullptr);
  ~ScheduleRunner();

  // Fires every schedule that is due. Returns how many runs were recorded.
  Result<int> Tick();
  // Fires schedule `id` now (trigger manual) without moving its next fire time; `force`
  // builds even when every input is unchanged. Returns the recorded run.
  Result<store::ScheduleRunRow> RunNow(int64_t id, bool force);

  // Torch watches prove the stable-ABI wheels they already have with a new torch instead
  // of rebuilding them; null (the default) fires the build. Set before Start.
  void SetTorchProver(TorchProver* prover) { prover_ = prover; }

  // Starts a thread that calls Tick() every `period_ms`; Stop() ends it (also at
  // destruction). Errors of a tick are logged, never thrown.
  void Start(int64_t period_ms);
  void Stop();

 private:
  struct FireRequest {
    int trigger = 0;
    int64_t fire_ms = 0;
    int64_t next_fire_ms = -1;
    bool force = false;
    std::string note;  // added to the run's detail
    // Watch firings: the state written with a submitted run, when upstream published the
    // change, and the git commit (and its tag or branch) to build instead of the source's.
    std::string watch_state;
    int64_t upstream_ms = 0;
    std::string git_commit;
  };
  Result<store::ScheduleRunRow> Fire(const store::ScheduleRow& schedule, const FireRequest& f);
  Result<store::ScheduleRunRow> Record(const store::ScheduleRow& schedule, const FireRequest& f,
                                       int outcome, const std::string& detail);
  Result<bool> FireIfDue(const store::ScheduleRow& schedule, int64_t now_ms);
  Result<bool> PollIfDue(const store::ScheduleRow& schedule, int64_t now_ms);
  // PollIfDue's steps (runner_watch.cc): a failed poll backs off; the first sets the
  // baseline; a change is dated by its upstream, then fired (or kept unseen when refused).
  Result<bool> PollFailed(const store::ScheduleRow& s, const WatchState& state, int64_t period,
                          int64_t now, const Status& why_failed);
  Status RecordFirstPoll(const store::ScheduleRow& s, const FireRequest& f, size_t items,
                         const std::vector<WatchItem>& fresh);
  static void DateChange(const std::vector<WatchItem>& fresh, FireRequest* f);
  Status FireChange(const store::ScheduleRow& s, const WatchState& state, int64_t period,
                    const std::vector<WatchItem>& fresh, FireRequest f);
  int64_t PollPeriodMs(const farm::v1::UpstreamWatch& watch) const;
  // The validation-only answer to new torch releases: true when it recorded the run, or
  // kept the releases unseen after a failure; false when the build must answer them.
  Result<bool> ProveInsteadOfBuild(const store::ScheduleRow& s, const FireRequest& f,
                                   const std::vector<WatchItem>& fresh);

  store::Store* store_;
  const Clock* clock_;
  SourceResolver* resolver_;
  BuildSubmitter* submitter_;
  RunnerOptions options_;
  UpstreamPoller* poller_;
  TorchProver* prover_ = nullptr;
  std::mutex fire_mu_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// The first fire time (Unix ms) of `cron` in `time_zone` strictly after `after_ms`.
// InvalidArgument for a bad expression or zone (the message says where).
Result<int64_t> NextFireMs(const std::string& cron, const std::string& time_zone, int64_t after_ms);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_RUNNER_H_
