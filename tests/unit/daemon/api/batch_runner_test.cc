#include "daemon/api/worker/batch_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace farm::api {
namespace {

struct Item {
  std::atomic<int>* runs;
  std::promise<void> done;
};

std::unique_ptr<Item> NewItem(std::atomic<int>* runs) {
  return std::make_unique<Item>(Item{runs, {}});
}

TEST(BatchRunnerTest, AnItemAddedAloneRunsInABatchOfOne) {
  std::vector<size_t> sizes;
  BatchRunner<Item> runner(
      [&](BatchRunner<Item>::Batch& batch) {
        sizes.push_back(batch.size());
        for (auto& i : batch) ++*i->runs, i->done.set_value();
      },
      8);
  std::atomic<int> a{0}, b{0};
  for (auto* runs : {&a, &b}) {
    auto item = NewItem(runs);
    auto done = item->done.get_future();
    ASSERT_TRUE(runner.Add(item));
    ASSERT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  }
  runner.Stop();
  EXPECT_EQ(a.load(), 1);
  EXPECT_EQ(b.load(), 1);
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 1}));
  EXPECT_EQ(runner.batches(), 2);
}

TEST(BatchRunnerTest, ConcurrentItemsRunOnceEachInBatchesNoLargerThanTheLimit) {
  constexpr int kThreads = 16, kItemsEach = 200;
  constexpr size_t kMaxBatch = 5;
  std::atomic<size_t> largest{0};
  std::atomic<int> in_batch{0}, overlaps{0};
  BatchRunner<Item> runner(
      [&](BatchRunner<Item>::Batch& batch) {
        if (in_batch.fetch_add(1) != 0) ++overlaps;  // batches never run side by side
        size_t seen = largest.load();
        while (batch.size() > seen && !largest.compare_exchange_weak(seen, batch.size())) {
        }
        for (auto& i : batch) ++*i->runs;
        in_batch.fetch_sub(1);
      },
      kMaxBatch);
  std::vector<std::atomic<int>> runs(kThreads * kItemsEach);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kItemsEach; ++i) {
        auto item = NewItem(&runs[t * kItemsEach + i]);
        EXPECT_TRUE(runner.Add(item));
      }
    });
  }
  for (auto& t : threads) t.join();
  runner.Stop();  // runs what is still queued
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_LE(largest.load(), kMaxBatch);
  EXPECT_LE(runner.batches(), kThreads * kItemsEach);
  EXPECT_GE(runner.batches(), kThreads * kItemsEach / static_cast<int>(kMaxBatch));
}

TEST(BatchRunnerTest, StopRunsWhatIsQueuedAndRefusesMore) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> batches_started{0};
  BatchRunner<Item> runner(
      [&](BatchRunner<Item>::Batch& batch) {
        if (batches_started.fetch_add(1) == 0) released.wait();  // hold the first batch
        for (auto& i : batch) ++*i->runs;
      },
      64);
  std::atomic<int> first{0};
  auto item = NewItem(&first);
  ASSERT_TRUE(runner.Add(item));
  for (int i = 0; i < 1000 && batches_started.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(batches_started.load(), 1);
  std::vector<std::atomic<int>> queued(10);
  for (auto& r : queued) {
    auto q = NewItem(&r);
    ASSERT_TRUE(runner.Add(q));
  }
  std::thread stopper([&] { runner.Stop(); });
  // Once Stop has begun, an item is refused and handed back; one queued before runs.
  std::unique_ptr<Item> late;
  std::atomic<int> late_runs{0};
  int accepted = 0;
  for (int i = 0; i < 1000; ++i) {
    late = NewItem(&late_runs);
    if (!runner.Add(late)) break;
    ++accepted;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_NE(late, nullptr) << "Add was never refused";
  release.set_value();
  stopper.join();
  EXPECT_EQ(first.load(), 1);
  for (const auto& r : queued) EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(late_runs.load(), accepted);
  EXPECT_GE(runner.batches(), 2);  // the held batch, then what was queued behind it
}

}  // namespace
}  // namespace farm::api
