// A worker's heartbeat against in-memory ports: what is written and when, what the worker
// is told to stop, and the write throttles.
#include "daemon/builds/heartbeat.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"

namespace farm::builds {
namespace {

constexpr int64_t kLeaseMs = 30'000;  // writes every 5 s

TEST(WriteThrottleTest, OneWritePerJobEveryFewSecondsAndAtOnceForANewAttempt) {
  WriteThrottle<int64_t> t;
  EXPECT_TRUE(t.Due(1, 1000, kProgressEveryMs));  // the first report of a job is written at once
  EXPECT_TRUE(t.Due(2, 1000, kProgressEveryMs));  // jobs are throttled apart
  EXPECT_FALSE(t.Due(1, 1000 + kProgressEveryMs - 1, kProgressEveryMs));
  EXPECT_TRUE(t.Due(1, 1000 + kProgressEveryMs, kProgressEveryMs));
  EXPECT_FALSE(t.Due(1, 1000 + kProgressEveryMs + 1, kProgressEveryMs));
  t.Forget(1);  // the attempt ended; a retry reports at once
  EXPECT_TRUE(t.Due(1, 1000 + kProgressEveryMs + 2, kProgressEveryMs));
}

TEST(BeatWriteEveryMsTest, SixTimesPerLeaseAtMostEveryFiveSeconds) {
  EXPECT_EQ(BeatWriteEveryMs(30'000), 5000);
  EXPECT_EQ(BeatWriteEveryMs(6'000), 1000);
  EXPECT_EQ(BeatWriteEveryMs(600'000), 5000);
  EXPECT_EQ(BeatWriteEveryMs(0), 1);
}

class HeartbeatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.workers["w-1"] = store::WorkerRow{.id = "w-1", .name = "gpu-box"};
  }

  farm::v1::HeartbeatResponse Beat(const farm::v1::HeartbeatRequest& req) {
    farm::v1::HeartbeatResponse resp;
    EXPECT_OK(heartbeats_.Beat("w-1", req, &resp));
    return resp;
  }
  static farm::v1::HeartbeatRequest Running(int64_t job_id, int attempt) {
    farm::v1::HeartbeatRequest req;
    req.set_worker_id("w-1");
    auto* r = req.add_running();
    r->set_job_id(job_id);
    r->set_attempt(attempt);
    return req;
  }

  testing::InMemoryStore store_;
  farm::testing::FakeClock clock_;
  Heartbeats heartbeats_{HeartbeatDeps{.workers = &store_,
                                       .leases = &store_,
                                       .jobs = &store_,
                                       .visits = &store_,
                                       .clock = &clock_,
                                       .lease_ms = kLeaseMs}};
};

TEST_F(HeartbeatTest, TheBeatIsWrittenAFewTimesPerLeaseAndAtOnceWhenTheStateChanges) {
  const int64_t start = clock_.NowUnixMs();
  Beat({});
  EXPECT_EQ(store_.worker_touches, 1);  // the first beat is written
  EXPECT_EQ(store_.workers["w-1"].last_heartbeat_ms, start);
  EXPECT_EQ(store_.visits, 1);  // one visit for the beat's reads and writes
  clock_.Advance(4999);
  Beat({});
  EXPECT_EQ(store_.worker_touches, 1);  // not due, and nothing changed
  farm::v1::HeartbeatRequest draining;
  draining.set_draining(true);
  Beat(draining);
  EXPECT_EQ(store_.worker_touches, 2);  // a change of state is written at once
  EXPECT_EQ(store_.workers["w-1"].state, store::WorkerState::kDraining);
  clock_.Advance(5000);
  Beat(draining);
  EXPECT_EQ(store_.worker_touches, 3);  // due again
  EXPECT_EQ(store_.workers["w-1"].last_heartbeat_ms, start + 9999);
  heartbeats_.Registered("w-1");  // a worker that registered again is written at once
  Beat({});
  EXPECT_EQ(store_.worker_touches, 4);
  EXPECT_EQ(store_.workers["w-1"].state, store::WorkerState::kIdle);
}

TEST_F(HeartbeatTest, TheLeasesAreRenewedWhenTheBeatIsWritten) {
  int64_t job = store_.AddBuild("attn", "alice", false);
  store_.Lease(job, 1, "w-1");
  Beat(Running(job, 1));
  EXPECT_EQ(store_.jobs[job].lease_expiry_ms, clock_.NowUnixMs() + kLeaseMs);
  EXPECT_EQ(store_.workers["w-1"].state, store::WorkerState::kBusy);
  clock_.Advance(1000);
  Beat(Running(job, 1));  // not due: the lease stands
  EXPECT_EQ(store_.jobs[job].lease_expiry_ms, clock_.NowUnixMs() - 1000 + kLeaseMs);
}

TEST_F(HeartbeatTest, ADrainRequestAndAQuarantineStand) {
  store_.workers["w-1"].drain_requested = true;
  EXPECT_TRUE(Beat({}).drain());
  EXPECT_EQ(store_.workers["w-1"].state, store::WorkerState::kDraining);
  store_.workers["w-1"].state = store::WorkerState::kQuarantined;
  store_.workers["w-1"].drain_requested = false;
  clock_.Advance(5000);
  EXPECT_FALSE(Beat(Running(7, 1)).drain());
  EXPECT_EQ(store_.workers["w-1"].state, store::WorkerState::kQuarantined);
}

TEST_F(HeartbeatTest, TheWorkerIsToldToStopWhatItNoLongerHoldsOrWasCancelled) {
  int64_t cancelled = store_.AddBuild("attn", "alice", false);
  store_.Lease(cancelled, 1, "w-1");
  store_.jobs[cancelled].cancel_requested = true;
  int64_t moved_on = store_.AddBuild("attn", "alice", false);
  store_.Lease(moved_on, 2, "w-2");  // requeued while w-1 was away, then leased to w-2
  int64_t requeued = store_.AddBuild("attn", "alice", false);
  store_.Lease(requeued, 1, "w-1");  // requeued after its lease expired, leased to nobody
  store_.jobs[requeued].state = store::kJobPending;
  store_.jobs[requeued].worker_id.clear();
  store_.attempts[requeued].back().cause = store::kCauseLostWorker;
  farm::v1::HeartbeatRequest req = Running(cancelled, 1);
  for (int64_t job : {moved_on, requeued}) {
    auto* r = req.add_running();
    r->set_job_id(job);
    r->set_attempt(1);
  }
  farm::v1::HeartbeatResponse resp = Beat(req);
  ASSERT_EQ(resp.cancel_size(), 2);
  EXPECT_EQ(resp.cancel(0).job_id(), cancelled);               // its cancellation was requested
  EXPECT_EQ(resp.cancel(1).job_id(), moved_on);                // another attempt runs it
  EXPECT_EQ(store_.jobs[requeued].state, store::kJobRunning);  // re-attached
  EXPECT_EQ(store_.jobs[requeued].worker_id, "w-1");
}

TEST_F(HeartbeatTest, NewCapabilitiesAreStoredAndProgressIsThrottledPerJob) {
  int64_t job = store_.AddBuild("attn", "alice", false);
  store_.Lease(job, 1, "w-1");
  farm::v1::HeartbeatRequest req = Running(job, 1);
  req.mutable_capabilities()->add_gpus()->set_name("NVIDIA H200");
  req.mutable_running(0)->set_units_done(3);
  req.mutable_running(0)->set_units_total(10);
  Beat(req);
  farm::v1::Capabilities stored;
  ASSERT_TRUE(stored.ParseFromString(store_.workers["w-1"].capabilities));
  EXPECT_EQ(stored.gpus(0).name(), "NVIDIA H200");
  ASSERT_EQ(store_.progress.size(), 1u);
  EXPECT_EQ(store_.progress[0].units_done, 3);
  req.clear_capabilities();
  req.mutable_running(0)->set_units_done(4);
  Beat(req);
  EXPECT_EQ(store_.progress.size(), 1u);  // within kProgressEveryMs
  heartbeats_.Ended(job);
  Beat(req);
  EXPECT_EQ(store_.progress.size(), 2u);
}

TEST_F(HeartbeatTest, AnUnknownWorkerIsNotFound) {
  farm::v1::HeartbeatResponse resp;
  EXPECT_EQ(heartbeats_.Beat("w-none", {}, &resp).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace farm::builds
