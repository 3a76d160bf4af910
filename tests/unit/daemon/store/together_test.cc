// Store::Together: several calls as one visit to the store.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class TogetherTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    ASSERT_OK(
        store_->UpsertWorker({.id = "w1", .name = "one", .state = store::WorkerState::kIdle}));
  }
};

TEST_F(TogetherTest, ReadsAndWritesInsideRunAsOneVisitAndOtherCallersWaitForIt) {
  std::atomic<bool> entered{false}, other_done{false};
  std::thread other;
  Status st = store_->Together([&]() -> Status {
    entered = true;
    other = std::thread([&] {
      EXPECT_OK(store_->GetWorker("w1").status());
      other_done = true;
    });
    // The other caller cannot get in while this visit lasts (bounded wait).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(other_done.load());
    // Calls inside see each other's writes, and a write commits as it would alone.
    FARM_RETURN_IF_ERROR(store_->TouchWorker("w1", 50, store::WorkerState::kBusy));
    FARM_ASSIGN_OR_RETURN(WorkerRow w, store_->GetWorker("w1"));
    EXPECT_EQ(w.state, store::WorkerState::kBusy);
    return store_->SetDrainRequested("w1", true);
  });
  ASSERT_OK(st);
  other.join();
  EXPECT_TRUE(entered.load());
  EXPECT_TRUE(other_done.load());
  auto w = store_->GetWorker("w1");
  ASSERT_OK(w.status());
  EXPECT_TRUE(w->drain_requested);
  EXPECT_EQ(w->state, store::WorkerState::kBusy);
}

TEST_F(TogetherTest, AnErrorInsideIsReturnedAndTheStoreStaysUsable) {
  Status st = store_->Together([&]() -> Status {
    FARM_ASSIGN_OR_RETURN(WorkerRow w, store_->GetWorker("w-missing"));
    return Status::Ok();
  });
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  // Nested visits are one visit too.
  EXPECT_OK(store_->Together(
      [&] { return store_->Together([&] { return store_->GetWorker("w1").status(); }); }));
  EXPECT_OK(store_->GetWorker("w1").status());
}

TEST_F(TogetherTest, OneTransactionKeepsEverythingOrNothing) {
  // Every write kept, a failed call's own writes undone.
  ASSERT_OK(store_->TogetherInOneTransaction([&]() -> Status {
    FARM_RETURN_IF_ERROR(
        store_->UpsertWorker({.id = "w2", .name = "two", .state = store::WorkerState::kIdle}));
    auto refused = store_->CompleteAttempt({.job_id = 404, .attempt = 1, .worker_id = "w2"}, 5);
    EXPECT_FALSE(refused.ok());
    return store_->SetDrainRequested("w2", true);
  }));
  auto w2 = store_->GetWorker("w2");
  ASSERT_OK(w2.status());
  EXPECT_TRUE(w2->drain_requested);
  // Nothing kept when the calls fail as a whole.
  Status st = store_->TogetherInOneTransaction([&]() -> Status {
    FARM_RETURN_IF_ERROR(
        store_->UpsertWorker({.id = "w3", .name = "three", .state = store::WorkerState::kIdle}));
    FARM_RETURN_IF_ERROR(store_->SetDrainRequested("w1", true));
    return Status::Aborted("changed my mind");
  });
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_EQ(store_->GetWorker("w3").status().code(), StatusCode::kNotFound);
  auto w1 = store_->GetWorker("w1");
  ASSERT_OK(w1.status());
  EXPECT_FALSE(w1->drain_requested);
  // The store goes on as before.
  ASSERT_OK(store_->SetDrainRequested("w1", true));
  EXPECT_TRUE(store_->GetWorker("w1")->drain_requested);
}

}  // namespace
}  // namespace farm::store
