// FetchScheduler: no more tasks run than its limits allow, in all and per upstream
// address; a task of a busy address lets those of others pass; a full queue refuses; and
// stopping drops what waits (its `dropped` runs) and joins what runs.
#include "daemon/mirror/fetch_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/support/test_util.h"

namespace farm::mirror {
namespace {

// Tasks that block until opened, counting how many run at once per address.
class Gate {
 public:
  std::function<void()> Task(const std::string& address) {
    return [this, address] {
      std::unique_lock lock(mu_);
      int now = ++running_[address];
      peak_[address] = std::max(peak_[address], now);
      ++started_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
      --running_[address];
      ++finished_;
      changed_.notify_all();
    };
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  bool WaitStarted(int n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return started_ >= n; });
  }
  bool WaitFinished(int n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return finished_ >= n; });
  }
  int Started() {
    std::lock_guard lock(mu_);
    return started_;
  }
  int Peak(const std::string& address) {
    std::lock_guard lock(mu_);
    return peak_[address];
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, int> running_, peak_;
  int started_ = 0, finished_ = 0;
  bool open_ = false;
};

TEST(FetchSchedulerTest, LimitsInAllAndPerAddressAndOthersPass) {
  FetchScheduler scheduler({.max_in_flight = 3, .max_per_address = 2, .max_queued = 100});
  Gate gate;
  for (int i = 0; i < 5; ++i) ASSERT_OK(scheduler.Submit("slow:80", gate.Task("slow:80"), {}));
  ASSERT_TRUE(gate.WaitStarted(2));
  // The slow address holds two threads; a task of another address gets the third.
  ASSERT_OK(scheduler.Submit("fast:80", gate.Task("fast:80"), {}));
  ASSERT_TRUE(gate.WaitStarted(3));
  EXPECT_EQ(scheduler.running(), 3);
  EXPECT_EQ(scheduler.queued(), 3);
  gate.Open();
  ASSERT_TRUE(gate.WaitFinished(6));
  EXPECT_EQ(gate.Peak("slow:80"), 2);
  EXPECT_EQ(gate.Peak("fast:80"), 1);
}

TEST(FetchSchedulerTest, AFullQueueRefusesAndStoppingDropsWhatWaits) {
  FetchScheduler scheduler({.max_in_flight = 1, .max_per_address = 1, .max_queued = 2});
  Gate gate;
  std::atomic<int> dropped{0};
  auto drop = [&] { ++dropped; };
  ASSERT_OK(scheduler.Submit("a:80", gate.Task("a:80"), drop));
  ASSERT_TRUE(gate.WaitStarted(1));
  ASSERT_OK(scheduler.Submit("a:80", gate.Task("a:80"), drop));
  ASSERT_OK(scheduler.Submit("b:80", gate.Task("b:80"), drop));
  EXPECT_EQ(scheduler.Submit("c:80", gate.Task("c:80"), drop).code(),
            StatusCode::kResourceExhausted);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.Open();
  });
  scheduler.Stop();  // drops the two waiting, joins the running one once it returns
  opener.join();
  EXPECT_EQ(dropped.load(), 2);
  EXPECT_EQ(gate.Started(), 1);
  EXPECT_EQ(scheduler.Submit("a:80", gate.Task("a:80"), drop).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace farm::mirror
