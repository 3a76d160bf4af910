#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class SqliteStoreTest : public StoreTest {
 protected:
  int64_t MakeBuild(int jobs) {
    BuildRow b{.recipe_name = "attn-example", .recipe = "r", .submitted_by = "t", .created_ms = 1};
    std::vector<JobRow> rows(static_cast<size_t>(jobs));
    for (auto& j : rows) j.cell = "cell", j.created_ms = 1;
    EXPECT_OK(store_->CreateBuild(&b, &rows));
    return b.id;
  }

  std::optional<JobRow> Acquire(const std::string& worker, int64_t now = 10) {
    auto r = store_->AcquireJob(worker, now, 1000, nullptr);
    EXPECT_OK(r.status());
    return r.ok() ? r.value() : std::nullopt;
  }
};

TEST_F(SqliteStoreTest, BuildSucceedsWhenEveryJobSucceeds) {
  int64_t build = MakeBuild(2);
  auto a = Acquire("w1");
  auto b = Acquire("w2");
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(Acquire("w3").has_value());
  EXPECT_EQ(store_->GetBuild(build)->state, kBuildRunning);
  for (const auto& j : {*a, *b}) {
    auto st = store_->CompleteAttempt({.job_id = j.id, .attempt = 1, .worker_id = j.worker_id}, 20);
    ASSERT_OK(st.status());
    EXPECT_EQ(st.value(), kJobSucceeded);
  }
  EXPECT_EQ(store_->GetBuild(build)->state, kBuildSucceeded);
}

TEST_F(SqliteStoreTest, DashboardAndIndexQueriesSeeTheFinishedJob) {
  int64_t build = MakeBuild(2);
  auto a = Acquire("w1", 10);
  ASSERT_TRUE(a);
  ArtifactRow art{.job_id = a->id, .attempt = 1, .filename = "x.whl", .sha256 = "ab", .size = 3};
  ASSERT_OK(store_->InsertArtifact(art).status());
  ASSERT_OK(
      store_->CompleteAttempt({.job_id = a->id, .attempt = 1, .worker_id = "w1"}, 70).status());
  auto counts = store_->CountJobsByState();
  ASSERT_OK(counts.status());
  EXPECT_EQ(counts->at(kJobPending), 1);
  EXPECT_EQ(counts->at(kJobSucceeded), 1);
  EXPECT_EQ(store_->ListJobsInState(kJobPending, 0, 10)->size(), 1u);
  auto run = store_->JobSpanHistogram(JobSpan::kRunTime, {10, 100});
  ASSERT_OK(run.status());
  EXPECT_EQ(run->count, 1);
  EXPECT_EQ(run->sum_ms, 60.0);
  EXPECT_EQ(run->cumulative, (std::vector<int64_t>{0, 1}));
  auto timings = store_->ListJobTimings(10);
  ASSERT_OK(timings.status());
  ASSERT_EQ(timings->size(), 1u);
  EXPECT_EQ(timings->at(0).recipe_name, "attn-example");
  auto index = store_->ListIndexArtifacts(10);
  ASSERT_OK(index.status());
  ASSERT_EQ(index->size(), 1u);
  EXPECT_EQ(index->at(0).cell, "cell");
  EXPECT_EQ(index->at(0).artifact.filename, "x.whl");
  BuildFilter by_worker{.worker_ids = {"w1"}, .any_worker = true};
  EXPECT_EQ(store_->ListBuildsMatching(by_worker, 0, 10)->size(), 1u);
  BuildFilter nobody{.any_worker = true};
  EXPECT_TRUE(store_->ListBuildsMatching(nobody, 0, 10)->empty());
  BuildFilter other{.recipe_name = "other"};
  EXPECT_TRUE(store_->ListBuildsMatching(other, 0, 10)->empty());
  EXPECT_EQ(store_->ListBuilds(build + 1, 10)->size(), 1u);
}

// A job built against a torch release candidate keeps its mark (migration 030), and the
// index's listing carries it to the views that leave its wheels out.
TEST_F(SqliteStoreTest, AReleaseCandidatesJobKeepsItsMark) {
  BuildRow b{.recipe_name = "attn-example", .recipe = "r", .submitted_by = "t", .created_ms = 1};
  std::vector<JobRow> rows(2);
  for (auto& j : rows) j.cell = "cell", j.created_ms = 1;
  rows[1].release_candidate = true;
  ASSERT_OK(store_->CreateBuild(&b, &rows));
  EXPECT_FALSE(store_->GetJob(rows[0].id)->release_candidate);
  EXPECT_TRUE(store_->GetJob(rows[1].id)->release_candidate);
  for (int i = 0; i < 2; ++i) {
    auto job = Acquire("w" + std::to_string(i), 10);
    ASSERT_TRUE(job);
    ArtifactRow art{.job_id = job->id, .attempt = 1, .filename = "x.whl", .sha256 = "ab"};
    ASSERT_OK(store_->InsertArtifact(art).status());
    ASSERT_OK(
        store_->CompleteAttempt({.job_id = job->id, .attempt = 1, .worker_id = job->worker_id}, 20)
            .status());
  }
  auto index = store_->ListIndexArtifacts(10);
  ASSERT_OK(index.status());
  ASSERT_EQ(index->size(), 2u);
  for (const IndexArtifactRow& row : *index) {
    EXPECT_EQ(row.release_candidate, row.artifact.job_id == rows[1].id) << row.artifact.job_id;
  }
}

TEST_F(SqliteStoreTest, LateReportOfSupersededAttemptIsRejected) {
  MakeBuild(1);
  auto first = Acquire("w1", 10);
  ASSERT_TRUE(first);
  auto expired = store_->ExpireLeases(5000);
  ASSERT_OK(expired.status());
  EXPECT_EQ(expired->size(), 1u);
  auto second = Acquire("w2", 6000);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->attempt, 2);
  auto late = store_->CompleteAttempt({.job_id = first->id, .attempt = 1, .worker_id = "w1"}, 7000);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(late.status().message().find("superseded"), std::string::npos);
  auto attempts = store_->ListAttempts(first->id);
  ASSERT_OK(attempts.status());
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ(attempts->at(0).cause, kCauseLostWorker);
}

TEST_F(SqliteStoreTest, BuildFailureIsNotRetriedButInfrastructureIs) {
  MakeBuild(2);
  auto a = Acquire("w1");
  auto infra = store_->CompleteAttempt(InfraFailure(a->id, 1, "w1"), 20);
  ASSERT_OK(infra.status());
  EXPECT_EQ(infra.value(), kJobPending);
  auto b = Acquire("w1");
  auto again = Acquire("w1");
  ASSERT_TRUE(b && again);
  auto failed = store_->CompleteAttempt({.job_id = b->id,
                                         .attempt = b->attempt,
                                         .worker_id = "w1",
                                         .cause = kCauseBuildFailed,
                                         .exit_code = 3,
                                         .detail = "exit 3",
                                         .max_attempts = 3},
                                        30);
  EXPECT_EQ(failed.value(), kJobFailed);
  // Repeating the same report answers with the outcome and changes nothing.
  auto repeat = store_->CompleteAttempt({.job_id = b->id,
                                         .attempt = b->attempt,
                                         .worker_id = "w1",
                                         .cause = kCauseBuildFailed,
                                         .exit_code = 3,
                                         .max_attempts = 3},
                                        31);
  EXPECT_EQ(repeat.value(), kJobFailed);
}

TEST_F(SqliteStoreTest, LogLinesAreStoredOnceAndWithoutGaps) {
  MakeBuild(1);
  auto j = Acquire("w1");
  std::vector<LogLineRow> first = {{1, 1, "a", 1}, {2, 1, "b", 1}};
  EXPECT_EQ(store_->AppendLogLines(j->id, 1, first).value(), 2);
  std::vector<LogLineRow> resend_with_gap = {{2, 1, "b", 1}, {3, 2, "c", 1}, {5, 1, "e", 1}};
  EXPECT_EQ(store_->AppendLogLines(j->id, 1, resend_with_gap).value(), 3);
  auto lines = store_->GetLogLines(j->id, 1, 0, 100);
  ASSERT_OK(lines.status());
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ(lines->at(2).text, "c");
  EXPECT_EQ(lines->at(2).stream, 2);
}

TEST_F(SqliteStoreTest, LogLinesKeepEveryByteOfTheOutput) {
  MakeBuild(1);
  auto j = Acquire("w1");
  const std::string odd = std::string("nul \0 here", 11) + " caf\xc3\xa9 \xef\xbf\xbd \\x00 '?'";
  ASSERT_OK(store_->AppendLogLines(j->id, 1, {{1, 1, odd, 1}, {2, 1, "", 2}}).status());
  auto lines = store_->GetLogLines(j->id, 1, 0, 10);
  ASSERT_OK(lines.status());
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ(lines->at(0).text, odd);
  EXPECT_EQ(lines->at(1).text, "");
}

TEST_F(SqliteStoreTest, ALogPastItsLimitEndsWithOneSystemLineAndLaterLinesAreAcknowledged) {
  MakeBuild(1);
  auto j = Acquire("w1");
  std::vector<LogLineRow> lines;
  for (int i = 1; i <= 10; ++i) lines.push_back({i, 1, std::string(100, 'x'), i});
  // 250 bytes: two lines fit, the third crosses the limit, the rest are dropped.
  EXPECT_EQ(store_->AppendLogLines(j->id, 1, lines, 250).value(), 10);
  EXPECT_EQ(store_->AppendLogLines(j->id, 1, {{11, 1, "more", 11}}, 250).value(), 11);
  // The worker's own lines still get in.
  EXPECT_EQ(
      store_->AppendLogLines(j->id, 1, {{12, kLogStreamSystem, "build exited 0", 12}}, 250).value(),
      12);
  auto stored = store_->GetLogLines(j->id, 1, 0, 100);
  ASSERT_OK(stored.status());
  ASSERT_EQ(stored->size(), 4u);
  EXPECT_EQ(stored->at(3).text, "build exited 0");
  EXPECT_EQ(stored->at(1).text, std::string(100, 'x'));
  EXPECT_EQ(stored->at(2).seq, 3);
  EXPECT_EQ(stored->at(2).stream, kLogStreamSystem);
  EXPECT_NE(stored->at(2).text.find("log truncated"), std::string::npos) << stored->at(2).text;
  EXPECT_NE(stored->at(2).text.find("250 bytes (--max-log-bytes)"), std::string::npos);
  EXPECT_EQ(store_->LastLogSeq(j->id, 1).value(), 12);
}

TEST_F(SqliteStoreTest, CancelStopsPendingAndFlagsRunning) {
  int64_t build = MakeBuild(2);
  auto running = Acquire("w1");
  ASSERT_OK(store_->CancelBuild(build, 50, "alice"));
  auto flagged = store_->RenewLeases("w1", 60, 1000);
  ASSERT_OK(flagged.status());
  ASSERT_EQ(flagged->size(), 1u);
  EXPECT_EQ(flagged->at(0).id, running->id);
  auto st = store_->CompleteAttempt({.job_id = running->id,
                                     .attempt = 1,
                                     .worker_id = "w1",
                                     .cause = kCauseCancelled,
                                     .exit_code = 143,
                                     .detail = "stopped at farmd's request"},
                                    70);
  EXPECT_EQ(st.value(), kJobCancelled);
  EXPECT_EQ(store_->GetBuild(build)->state, kBuildCancelled);
  auto jobs = store_->ListJobs(build);
  ASSERT_OK(jobs.status());
  for (const auto& j : *jobs) {
    EXPECT_EQ(j.cancelled_by, "alice");
    // The running one too says who cancelled it, not the worker's words for the stop.
    EXPECT_EQ(j.error, "cancelled by alice");
  }
  // An ended build is not cancelled again: refused, its finish time unchanged.
  const int64_t finished = store_->GetBuild(build)->finished_ms;
  Status again = store_->CancelBuild(build, 90, "bob");
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("already was cancelled"), std::string::npos) << again.message();
  EXPECT_EQ(store_->GetBuild(build)->finished_ms, finished);
  EXPECT_EQ(store_->ListJobs(build)->at(0).cancelled_by, "alice");
}

TEST_F(SqliteStoreTest, ReopenKeepsEverything) {
  int64_t build = MakeBuild(1);
  auto j = Acquire("w1");
  ASSERT_OK(store_->AppendLogLines(j->id, 1, {{1, 1, "line", 1}}).status());
  ArtifactRow art{.job_id = j->id, .attempt = 1, .filename = "x.whl", .sha256 = "ab", .size = 3};
  ASSERT_OK(store_->InsertArtifact(art).status());
  EXPECT_OK(store_->InsertArtifact(art).status());  // idempotent
  art.sha256 = "cd";
  EXPECT_EQ(store_->InsertArtifact(art).status().code(), StatusCode::kAlreadyExists);
  store_.reset();
  auto reopened = under_test_.Open();
  ASSERT_OK(reopened.status());
  EXPECT_EQ(reopened.value()->GetBuild(build)->recipe_name, "attn-example");
  EXPECT_EQ(reopened.value()->GetLogLines(j->id, 1, 0, 10)->size(), 1u);
  EXPECT_EQ(reopened.value()->ListArtifacts(j->id)->size(), 1u);
  EXPECT_EQ(reopened.value()->GetJob(j->id)->state, kJobRunning);
}

TEST_F(SqliteStoreTest, SucceededJobWithArtifactsAnswersTheSameKey) {
  BuildRow b{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 1};
  std::vector<JobRow> jobs = {JobRow{.cell = "c", .build_key = "key1", .created_ms = 1}};
  ASSERT_OK(store_->CreateBuild(&b, &jobs));
  EXPECT_FALSE(store_->FindSucceededJob("key1").value().has_value());
  auto j = Acquire("w1");
  ArtifactRow art{.job_id = j->id, .attempt = 1, .filename = "x.whl", .sha256 = "ab", .size = 3};
  ASSERT_OK(store_->InsertArtifact(art).status());
  ASSERT_OK(
      store_->CompleteAttempt({.job_id = j->id, .attempt = 1, .worker_id = "w1"}, 5).status());
  auto prior = store_->FindSucceededJob("key1");
  ASSERT_TRUE(prior.value().has_value());
  EXPECT_FALSE(store_->FindSucceededJob("other").value().has_value());

  BuildRow again{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 9};
  std::vector<JobRow> reused = {
      JobRow{.cell = "c", .build_key = "key1", .reused_from = prior.value()->id, .created_ms = 9}};
  ASSERT_OK(store_->CreateBuild(&again, &reused));
  EXPECT_EQ(store_->GetBuild(again.id)->state, kBuildSucceeded);
  EXPECT_EQ(store_->GetJob(reused[0].id)->state, kJobSucceeded);
  auto copied = store_->ListArtifacts(reused[0].id);
  ASSERT_EQ(copied->size(), 1u);
  EXPECT_EQ(copied->at(0).sha256, "ab");
  EXPECT_FALSE(Acquire("w2").has_value());
}

TEST_F(SqliteStoreTest, RestartedWorkerLosesItsJobsAndAttemptLimitIsPerJob) {
  BuildRow b{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 1};
  std::vector<JobRow> jobs = {JobRow{.cell = "a", .max_attempts = 2, .created_ms = 1},
                              JobRow{.cell = "b", .max_attempts = 2, .created_ms = 1}};
  ASSERT_OK(store_->CreateBuild(&b, &jobs));
  auto a = Acquire("w1");
  auto c = Acquire("w1");
  auto lost = store_->ReleaseWorkerJobs("w1", {c->id}, "worker w1 restarted", 20);
  ASSERT_OK(lost.status());
  EXPECT_EQ(lost.value(), std::vector<int64_t>{a->id});
  EXPECT_EQ(store_->GetJob(a->id)->state, kJobPending);
  EXPECT_EQ(store_->GetJob(c->id)->state, kJobRunning);
  auto again = Acquire("w2", 30);
  ASSERT_EQ(again->id, a->id);
  ASSERT_OK(store_->ExpireLeases(5000).status());  // second loss: limit of 2 reached
  EXPECT_EQ(store_->GetJob(a->id)->state, kJobFailed);
  EXPECT_EQ(store_->CountRunningJobs("w1").value(), 0);
}

TEST_F(SqliteStoreTest, WorkerBackFromACutReattachesUnlessTheJobMovedOn) {
  MakeBuild(2);
  auto a = Acquire("w1", 10);
  auto b = Acquire("w1", 10);
  ASSERT_OK(store_->ExpireLeases(5000).status());
  auto taken = Acquire("w2", 5001);  // w2 takes job a's second attempt
  ASSERT_EQ(taken->id, a->id);
  EXPECT_FALSE(store_->ReattachAttempt(a->id, 1, "w1", 5002, 1000).value());
  EXPECT_FALSE(store_->ReattachAttempt(b->id, 1, "w2", 5002, 1000).value());
  EXPECT_TRUE(store_->ReattachAttempt(b->id, 1, "w1", 5002, 1000).value());
  EXPECT_EQ(store_->GetJob(b->id)->state, kJobRunning);
  EXPECT_EQ(store_->ListAttempts(b->id)->size(), 1u);
  EXPECT_EQ(store_->ListAttempts(b->id)->at(0).cause, kCauseNone);
  auto done = store_->CompleteAttempt({.job_id = b->id, .attempt = 1, .worker_id = "w1"}, 6000);
  EXPECT_EQ(done.value(), kJobSucceeded);
}

TEST_F(SqliteStoreTest, RetryQueuesAFailedJobAgainKeepingItsHistory) {
  int64_t build = MakeBuild(1);
  auto j = Acquire("w1");
  EXPECT_EQ(store_->RetryJob(j->id, 15).code(), StatusCode::kFailedPrecondition);
  ASSERT_OK(store_
                ->CompleteAttempt({.job_id = j->id,
                                   .attempt = 1,
                                   .worker_id = "w1",
                                   .cause = kCauseBuildFailed,
                                   .exit_code = 2},
                                  20)
                .status());
  EXPECT_EQ(store_->GetBuild(build)->state, kBuildFailed);
  ASSERT_OK(store_->RetryJob(j->id, 30));
  EXPECT_EQ(store_->GetBuild(build)->state, kBuildQueued);
  auto again = Acquire("w2", 40);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempt, 2);
  EXPECT_EQ(store_->ListAttempts(j->id)->size(), 2u);
}

TEST_F(SqliteStoreTest, DrainRequestSurvivesWorkerReports) {
  ASSERT_OK(store_->UpsertWorker({"w1", "gb10", "", store::WorkerState::kIdle, 1, 1}));
  ASSERT_OK(store_->SetDrainRequested("w1", true));
  ASSERT_OK(store_->UpsertWorker({"w1", "gb10", "", store::WorkerState::kBusy, 1, 2}));
  EXPECT_TRUE(store_->GetWorker("w1")->drain_requested);
  EXPECT_EQ(store_->SetDrainRequested("nope", true).code(), StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, ExpectedRunTimeIsTheCountedAttemptOfTheLastBuiltJob) {
  MakeBuild(1);
  auto lost = Acquire("w1", 10);
  ASSERT_TRUE(lost);
  ASSERT_OK(store_->ExpireLeases(5000).status());  // attempt 1 lost; queued again
  auto second = Acquire("w2", 9000);
  ASSERT_TRUE(second);
  ASSERT_OK(store_->CompleteAttempt({.job_id = second->id, .attempt = 2, .worker_id = "w2"}, 9500)
                .status());
  // The counted attempt ran 500 ms; the queue and the lost attempt before it do not count.
  auto ms = store_->LastSuccessfulRunMs("attn-example", "cell", 0);
  ASSERT_OK(ms.status());
  EXPECT_EQ(ms->value_or(-1), 500);
  EXPECT_FALSE(store_->LastSuccessfulRunMs("other-recipe", "cell", 0)->has_value());
  EXPECT_FALSE(store_->LastSuccessfulRunMs("attn-example", "other-cell", 0)->has_value());
  EXPECT_FALSE(store_->LastSuccessfulRunMs("attn-example", "cell", second->id)->has_value());
  // Progress from the worker holding a running attempt; the peak never falls.
  MakeBuild(1);
  auto running = Acquire("w1", 10000);
  ASSERT_TRUE(running);
  EXPECT_TRUE(*store_->RecordProgress({running->id, 1, "w1", 3, 9, 1000}));
  EXPECT_FALSE(*store_->RecordProgress({running->id, 1, "w1", 3, 9, 500}));   // nothing new
  EXPECT_FALSE(*store_->RecordProgress({running->id, 1, "w9", 4, 9, 5000}));  // not its job
  auto attempts = store_->ListAttempts(running->id);
  EXPECT_EQ(attempts->at(0).units_done, 3);
  EXPECT_EQ(attempts->at(0).units_total, 9);
  EXPECT_EQ(attempts->at(0).peak_rss_bytes, 1000);
}

TEST_F(SqliteStoreTest, JobsAndPublicationsOfManyBuildsAtOnce) {
  int64_t one = MakeBuild(2), two = MakeBuild(1), three = MakeBuild(3);
  // 1,002 ids: more than one query's worth, with build `two` in the last one; ids without
  // a build have no entry.
  std::vector<int64_t> ids{three, one};
  for (int64_t i = 0; i < 999; ++i) ids.push_back(1000 + i);
  ids.push_back(two);
  auto jobs = store_->ListJobsOfBuilds(ids);
  ASSERT_OK(jobs.status());
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ(jobs->at(one).size(), 2u);
  EXPECT_EQ(jobs->at(two).size(), 1u);
  ASSERT_EQ(jobs->at(three).size(), 3u);
  EXPECT_LT(jobs->at(three)[0].id, jobs->at(three)[2].id);
  EXPECT_EQ(jobs->at(three)[0].build_id, three);
  EXPECT_TRUE(store_->ListJobsOfBuilds({})->empty());
  auto pubs = store_->ListPublicationsOfBuilds(ids);
  ASSERT_OK(pubs.status());
  EXPECT_TRUE(pubs->empty());  // the builds page's rows are checked in router_test
}

TEST_F(SqliteStoreTest, AWatchScheduleKeepsItsStateWithTheRunItFired) {
  // Bytes that are not text: the serialized watch is a protobuf.
  const std::string watch("\x0a\x05\x12\x03>=2\x20\x3c\x00\xff", 10);
  ScheduleRow schedule{.name = "release",
                       .recipe_name = "r",
                       .request = "q",
                       .next_fire_ms = 5,
                       .created_by = "t",
                       .watch = watch};
  ASSERT_OK(store_->InsertSchedule(&schedule));
  EXPECT_EQ(store_->GetSchedule(schedule.id)->watch, watch);
  ASSERT_OK(store_->SetWatchState(schedule.id, "v1\nprimed\n", 65));
  auto row = store_->GetSchedule(schedule.id);
  ASSERT_OK(row.status());
  EXPECT_EQ(row->watch_state, "v1\nprimed\n");
  EXPECT_EQ(row->next_fire_ms, 65);
  EXPECT_EQ(store_->SetWatchState(schedule.id + 1, "x", 1).code(), StatusCode::kNotFound);

  // The run a change fired and the state that records the change commit together.
  BuildRow b{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 70};
  std::vector<JobRow> jobs(1);
  jobs[0].cell = "cell";
  BuildLinks links{.run = ScheduleRunRow{.schedule_id = schedule.id,
                                         .trigger = 4,
                                         .outcome = 1,
                                         .fire_ms = 70,
                                         .created_ms = 70,
                                         .detail = "new",
                                         .upstream_ms = 12,
                                         .watch_state = "v1\nseen a\n"},
                   .next_fire_ms = 125};
  ASSERT_OK(store_->CreateBuildLinked(&b, &jobs, &links));
  row = store_->GetSchedule(schedule.id);
  EXPECT_EQ(row->watch_state, "v1\nseen a\n");
  EXPECT_EQ(row->next_fire_ms, 125);
  auto runs = store_->ListScheduleRuns(schedule.id, 5);
  ASSERT_OK(runs.status());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].upstream_ms, 12);
  EXPECT_EQ((*runs)[0].build_id, b.id);
  // A run recorded without a state leaves the state alone.
  ScheduleRunRow skipped{.schedule_id = schedule.id, .trigger = 4, .outcome = 3, .fire_ms = 80};
  ASSERT_OK(store_->RecordScheduleRun(&skipped, 185));
  EXPECT_EQ(store_->GetSchedule(schedule.id)->watch_state, "v1\nseen a\n");
}

TEST_F(SqliteStoreTest, SourceArchivesNamedByASchedulesOrAnUnfinishedBuildAreNeverCollected) {
  const std::string kept_by_build(64, 'b'), kept_by_schedule(64, 'c'), unused(64, 'd');
  for (const std::string& sha : {kept_by_build, kept_by_schedule, unused}) {
    ASSERT_OK(store_->RecordSourceArchive({.sha256 = sha,
                                           .size = 10,
                                           .files = 1,
                                           .origin = "directory src (1 file)",
                                           .uploaded_by = "laptop",
                                           .created_ms = 100,
                                           .last_used_ms = 100}));
  }
  BuildRow b{.recipe_name = "r",
             .recipe = "r",
             .submitted_by = "t",
             .created_ms = 1,
             .source_sha256 = kept_by_build};
  std::vector<JobRow> jobs(1);
  jobs[0].cell = "cell";
  ASSERT_OK(store_->CreateBuild(&b, &jobs));
  ScheduleRow schedule{.name = "nightly",
                       .recipe_name = "r",
                       .request = "q",
                       .cron = "@daily",
                       .time_zone = "UTC",
                       .created_by = "t",
                       .source_sha256 = kept_by_schedule};
  ASSERT_OK(store_->InsertSchedule(&schedule));
  EXPECT_EQ(store_->GetBuild(b.id)->source_sha256, kept_by_build);

  auto collectable = store_->ListCollectableSources(1000, 10);
  ASSERT_OK(collectable.status());
  ASSERT_EQ(collectable->size(), 1u);
  EXPECT_EQ((*collectable)[0].sha256, unused);
  EXPECT_FALSE(*store_->ForgetSourceArchive(kept_by_build, 1000));
  EXPECT_FALSE(*store_->ForgetSourceArchive(kept_by_schedule, 1000));
  EXPECT_FALSE(*store_->ForgetSourceArchive(unused, 50));  // used after the cut-off
  EXPECT_TRUE(*store_->ForgetSourceArchive(unused, 1000));
  EXPECT_EQ(store_->GetSourceArchive(unused).status().code(), StatusCode::kNotFound);

  // Once the build ended and the schedule was deleted, both may go.
  auto job = Acquire("w1");
  ASSERT_TRUE(job);
  ASSERT_OK(
      store_->CompleteAttempt({.job_id = job->id, .attempt = 1, .worker_id = "w1"}, 20).status());
  ASSERT_OK(store_->DeleteSchedule(schedule.id, 30));
  EXPECT_EQ(store_->ListCollectableSources(1000, 10)->size(), 2u);

  // A use moves the cut-off; recording again keeps the first upload's row.
  ASSERT_OK(store_->TouchSourceArchive(kept_by_build, 2000));
  EXPECT_EQ(store_->ListCollectableSources(1000, 10)->size(), 1u);
  ASSERT_OK(store_->RecordSourceArchive({.sha256 = kept_by_build,
                                         .size = 10,
                                         .files = 1,
                                         .uploaded_by = "other",
                                         .created_ms = 3000,
                                         .last_used_ms = 3000}));
  auto row = store_->GetSourceArchive(kept_by_build);
  ASSERT_OK(row.status());
  EXPECT_EQ(row->uploaded_by, "laptop");
  EXPECT_EQ(row->last_used_ms, 3000);
  EXPECT_EQ(store_->TouchSourceArchive(std::string(64, 'e'), 1).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace farm::store
