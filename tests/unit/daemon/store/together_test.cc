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

class TogetherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = under_test_.Open();
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
    ASSERT_OK(store_->UpsertWorker({.id = "w1", .name = "one", .state = "idle"}));
  }

  testing::ScopedTempDir dir_;
  StoreUnderTest under_test_{dir_.path()};
  std::unique_ptr<Store> store_;
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
    FARM_RETURN_IF_ERROR(store_->TouchWorker("w1", 50, "busy"));
    FARM_ASSIGN_OR_RETURN(WorkerRow w, store_->GetWorker("w1"));
    EXPECT_EQ(w.state, "busy");
    return store_->SetDrainRequested("w1", true);
  });
  ASSERT_OK(st);
  other.join();
  EXPECT_TRUE(entered.load());
  EXPECT_TRUE(other_done.load());
  auto w = store_->GetWorker("w1");
  ASSERT_OK(w.status());
  EXPECT_TRUE(w->drain_requested);
  EXPECT_EQ(w->state, "busy");
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

}  // namespace
}  // namespace farm::store
