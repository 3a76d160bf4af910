#include "daemon/api/combiner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace farm::api {
namespace {

struct Item {
  int runs = 0;
};

TEST(CombinerTest, ALoneCallRunsAtOnceInABatchOfOne) {
  std::vector<size_t> sizes;
  Combiner<Item> combiner(
      [&](const std::vector<Item*>& batch) {
        sizes.push_back(batch.size());
        for (Item* i : batch) ++i->runs;
      },
      8);
  Item a, b;
  combiner.Run(&a);
  combiner.Run(&b);
  EXPECT_EQ(a.runs, 1);
  EXPECT_EQ(b.runs, 1);
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 1}));
  EXPECT_EQ(combiner.batches(), 2);
}

TEST(CombinerTest, ConcurrentCallsRunOnceEachInBatchesNoLargerThanTheLimit) {
  constexpr int kThreads = 16, kCallsEach = 200;
  constexpr size_t kMaxBatch = 5;
  std::atomic<size_t> largest{0};
  std::atomic<int> in_batch{0}, overlaps{0};
  Combiner<Item> combiner(
      [&](const std::vector<Item*>& batch) {
        if (in_batch.fetch_add(1) != 0) ++overlaps;  // batches never run side by side
        size_t seen = largest.load();
        while (batch.size() > seen && !largest.compare_exchange_weak(seen, batch.size())) {
        }
        for (Item* i : batch) ++i->runs;
        std::this_thread::yield();
        in_batch.fetch_sub(1);
      },
      kMaxBatch);
  std::vector<std::vector<Item>> items(kThreads, std::vector<Item>(kCallsEach));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (Item& item : items[t]) {
        combiner.Run(&item);
        EXPECT_EQ(item.runs, 1);  // done when Run returns
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& per_thread : items) {
    for (const Item& item : per_thread) EXPECT_EQ(item.runs, 1);
  }
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_LE(largest.load(), kMaxBatch);
  EXPECT_LE(combiner.batches(), kThreads * kCallsEach);
  EXPECT_GE(combiner.batches(), kThreads * kCallsEach / static_cast<int>(kMaxBatch));
}

}  // namespace
}  // namespace farm::api
