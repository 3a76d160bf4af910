// The counters behind /metrics and the overview (jobs by state, the queue-wait and
// run-time histograms; migration 017) against a full recount of the jobs after a mixed
// workload: submit, lease (one at a time and in a batch), complete, fail, an
// infrastructure failure retried, cancel, retry, expire, a worker's jobs released, a
// reused job, a validation job, logs written; and the queued jobs kept per principal
// (migration 021) against the same recount. Runs on SQLite (store_test) and PostgreSQL
// (store_pg_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

struct Figures {
  std::vector<int64_t> by_state;
  SpanHistogram wait;
  SpanHistogram run;
};

SpanHistogram Histogram(const std::vector<int64_t>& bounds) {
  SpanHistogram h;
  h.bounds_ms = bounds;
  h.cumulative.assign(bounds.size(), 0);
  return h;
}

void Add(SpanHistogram& h, int64_t span) {
  h.count++;
  h.sum_ms += static_cast<double>(span);
  for (size_t i = 0; i < h.bounds_ms.size(); ++i) {
    if (span <= h.bounds_ms[i]) h.cumulative[i]++;
  }
}

class JobCountersTest : public StoreTest {
 protected:
  // What the counters should say, from every job's row.
  Figures Recount() {
    Figures f{std::vector<int64_t>(6, 0), Histogram(kQueueWaitBoundsMs),
              Histogram(kRunTimeBoundsMs)};
    auto builds = store_->ListBuilds(0, 10'000);
    EXPECT_OK(builds.status());
    for (const auto& b : builds.value()) {
      auto jobs = store_->ListJobs(b.id);
      EXPECT_OK(jobs.status());
      for (const auto& j : jobs.value()) {
        f.by_state.at(static_cast<size_t>(j.state))++;
        if (j.started_ms > 0 && j.reused_from == 0) Add(f.wait, j.started_ms - j.created_ms);
        if (j.started_ms > 0 && j.finished_ms > 0 && j.state >= kJobSucceeded) {
          Add(f.run, j.finished_ms - j.started_ms);
        }
      }
    }
    return f;
  }

  void ExpectCountersMatch(const std::string& when) {
    SCOPED_TRACE(when);
    Figures want = Recount();
    auto by_state = store_->CountJobsByState();
    ASSERT_OK(by_state.status());
    EXPECT_EQ(by_state.value(), want.by_state);
    // The queued jobs of the one submitter (migration 021's triggers on the same rows).
    auto usage = store_->GetPrincipalUsage("t");
    ASSERT_OK(usage.status());
    EXPECT_EQ(usage->queued_jobs, want.by_state.at(kJobPending) + want.by_state.at(kJobRunning));
    for (auto [span, bounds, expected] :
         {std::tuple{JobSpan::kQueueWait, &kQueueWaitBoundsMs, &want.wait},
          std::tuple{JobSpan::kRunTime, &kRunTimeBoundsMs, &want.run}}) {
      auto kept = store_->JobSpanHistogram(span, *bounds);
      ASSERT_OK(kept.status());
      EXPECT_EQ(kept->cumulative, expected->cumulative);
      EXPECT_EQ(kept->count, expected->count);
      EXPECT_EQ(kept->sum_ms, expected->sum_ms);
      // The same bounds plus one more are counted over every job: the same figures.
      std::vector<int64_t> other = *bounds;
      other.push_back(INT64_MAX / 2);
      auto scanned = store_->JobSpanHistogram(span, other);
      ASSERT_OK(scanned.status());
      EXPECT_EQ(scanned->count, kept->count);
      EXPECT_EQ(scanned->sum_ms, kept->sum_ms);
      EXPECT_TRUE(std::equal(kept->cumulative.begin(), kept->cumulative.end(),
                             scanned->cumulative.begin()));
    }
  }

  int64_t Submit(int jobs, int64_t now) {
    BuildRow b{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = now};
    std::vector<JobRow> rows(static_cast<size_t>(jobs));
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i].cell = "cell-" + std::to_string(i);
      rows[i].created_ms = now;
      rows[i].max_attempts = 2;
    }
    EXPECT_OK(store_->CreateBuild(&b, &rows));
    builds_.push_back(b.id);
    return b.id;
  }

  std::vector<JobRow> Running() {
    auto r = store_->ListJobsInState(kJobRunning, 0, 10'000);
    EXPECT_OK(r.status());
    return r.ok() ? r.value() : std::vector<JobRow>{};
  }

  // One random store operation at `now`, as farmd's callers would make it.
  void RandomStep(std::mt19937& rng, int64_t now, int64_t lease) {
    auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
    switch (rng() % 9) {
      case 0:
      case 1:
        Submit(1 + static_cast<int>(rng() % 3), now);
        break;
      case 2: {
        auto j = store_->AcquireJob("w" + std::to_string(rng() % 4), now, lease, nullptr);
        ASSERT_OK(j.status());
        break;
      }
      case 3: {
        auto ids = store_->ListLeasableJobIds(now, 3);
        ASSERT_OK(ids.status());
        std::vector<LeaseRequest> batch;
        for (int64_t id : ids.value()) batch.push_back({.job_id = id, .worker_id = "wb"});
        ASSERT_OK(store_->LeaseJobs(batch, now, lease).status());
        break;
      }
      case 4:
      case 5: {
        auto running = Running();
        if (running.empty()) break;
        const JobRow j = pick(running);
        // Its log, stored in chunks (migration 020), touches no job row the counters read.
        ASSERT_OK(store_->AppendLogLines(j.id, j.attempt, {{1, 1, "line", now}}).status());
        static constexpr int kCauses[] = {kCauseCompleted, kCauseBuildFailed, kCauseInfrastructure};
        ASSERT_OK(store_
                      ->CompleteAttempt({.job_id = j.id,
                                         .attempt = j.attempt,
                                         .worker_id = j.worker_id,
                                         .cause = kCauses[rng() % 3],
                                         .max_attempts = 2},
                                        now)
                      .status());
        break;
      }
      case 6:
        if (!builds_.empty()) (void)store_->CancelBuild(pick(builds_), now, "t");  // may have ended
        break;
      case 7: {
        auto failed = store_->ListJobsInState(rng() % 2 ? kJobFailed : kJobCancelled, 0, 100);
        ASSERT_OK(failed.status());
        if (!failed->empty()) ASSERT_OK(store_->RetryJob(pick(failed.value()).id, now));
        break;
      }
      case 8:
        if (rng() % 2) {
          ASSERT_OK(store_->ExpireLeases(now).status());
        } else {
          ASSERT_OK(store_->ReleaseWorkerJobs("w" + std::to_string(rng() % 4), {}, "restarted", now)
                        .status());
        }
        break;
    }
  }

  // A job answered by an earlier build's wheels: succeeded at creation, never queued.
  void CreateReusedBuild() {
    BuildRow reused_build{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 5};
    std::vector<JobRow> reused(1);
    reused[0] = JobRow{.cell = "c",
                       .state = kJobSucceeded,
                       .reused_from = 999,
                       .created_ms = 5,
                       .started_ms = 5,
                       .finished_ms = 5};
    ASSERT_OK(store_->CreateBuild(&reused_build, &reused));
  }

  // A validation job of the first succeeded build job (not a reused one).
  void QueueOneValidationJob(int64_t now) {
    auto done = store_->ListJobsInState(kJobSucceeded, 0, 100);
    ASSERT_OK(done.status());
    for (const JobRow& target : done.value()) {
      if (target.reused_from != 0) continue;
      JobRow v{.build_id = target.build_id,
               .cell = target.cell,
               .created_ms = now,
               .kind = kJobValidate,
               .target_job_id = target.id,
               .target_attempt = target.attempt};
      ASSERT_OK(store_->QueueValidationJob(v).status());
      break;
    }
  }

  std::vector<int64_t> builds_;
};

TEST_F(JobCountersTest, CountersEqualAFullRecountAfterAMixedWorkload) {
  std::mt19937 rng(17);
  int64_t now = 1'000;
  const int64_t lease = 60'000;
  ExpectCountersMatch("empty store");
  ASSERT_NO_FATAL_FAILURE(CreateReusedBuild());
  for (int step = 0; step < 400; ++step) {
    now += std::uniform_int_distribution<int64_t>(1, 400'000)(rng);
    ASSERT_NO_FATAL_FAILURE(RandomStep(rng, now, lease));
    if (step % 50 == 49) ExpectCountersMatch("after step " + std::to_string(step));
  }
  ASSERT_NO_FATAL_FAILURE(QueueOneValidationJob(now));
  ExpectCountersMatch("after a validation job");
  auto by_state = store_->CountJobsByState();
  ASSERT_OK(by_state.status());
  // The workload reached every state.
  for (int s = kJobPending; s <= kJobCancelled; ++s) EXPECT_GT(by_state->at(s), 0) << s;
  Reopen();
  ExpectCountersMatch("after reopening the store");
}

}  // namespace
}  // namespace farm::store
