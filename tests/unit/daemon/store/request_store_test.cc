// Wheel requests (migration 028), on SQLite and, in store_pg_test, on PostgreSQL: identical
// requests filed from many threads at once make one row with every filing counted, the
// request quota counts a principal's (or an anonymous address's) filings in its window and
// a refused filing stores nothing, and a state moves only from the state the caller read.
#include "daemon/store/request_store.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class RequestStoreTest : public StoreTest {
 protected:
  void SetUpOnStore() override {
    requests_ = AsRequestStore(store_.get());
    ASSERT_NE(requests_, nullptr);
  }

  static RequestRow Row(const std::string& key) {
    return RequestRow{.key = key,
                      .package = "attn",
                      .python = "3.11",
                      .cuda = "12.8",
                      .compute_capability = "9.0",
                      .platform = "linux_x86_64",
                      .state = 1,
                      .first_by = "bob"};
  }

  RequestStore* requests_ = nullptr;
};

TEST_F(RequestStoreTest, IdenticalRequestsFiledAtOnceMakeOneRow) {
  constexpr int kThreads = 16;
  std::vector<std::thread> threads;
  std::vector<std::pair<int64_t, bool>> got(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto filed = requests_->FileRequest(
          Row("k1"), {.principal = "p" + std::to_string(i), .created_ms = 100 + i}, {});
      if (filed.ok()) got[i] = {filed->first.id, filed->second};
    });
  }
  for (auto& t : threads) t.join();
  std::set<int64_t> ids;
  int created = 0;
  for (const auto& [id, made] : got) ids.insert(id), created += made;
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_NE(*ids.begin(), 0);
  EXPECT_EQ(created, 1);
  auto row = requests_->GetRequest(*ids.begin());
  ASSERT_OK(row.status());
  EXPECT_EQ(row->filings, kThreads);
  EXPECT_EQ(row->package, "attn");
  auto filings = requests_->ListRequestFilings(row->id, 100);
  ASSERT_OK(filings.status());
  EXPECT_EQ(filings->size(), static_cast<size_t>(kThreads));
  auto all = requests_->ListRequests(0, 0, 10);
  ASSERT_OK(all.status());
  EXPECT_EQ(all->size(), 1u);
}

TEST_F(RequestStoreTest, TheQuotaCountsFilingsInTheWindowAndARefusalStoresNothing) {
  const FilingLimit two{.max = 2, .since_ms = 1000};
  RequestFiling bob{.principal = "bob", .created_ms = 500};
  ASSERT_OK(requests_->FileRequest(Row("old"), bob, two).status());  // before the window
  bob.created_ms = 1500;
  ASSERT_OK(requests_->FileRequest(Row("a"), bob, two).status());
  ASSERT_OK(requests_->FileRequest(Row("b"), bob, two).status());
  auto refused = requests_->FileRequest(Row("c"), bob, two);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  auto all = requests_->ListRequests(0, 0, 10);
  ASSERT_OK(all.status());
  EXPECT_EQ(all->size(), 3u);
  // Anonymous filings count per address.
  RequestFiling anon{.address = "127.0.0.9", .created_ms = 1500};
  ASSERT_OK(requests_->FileRequest(Row("a"), anon, two).status());
  ASSERT_OK(requests_->FileRequest(Row("a"), anon, two).status());
  EXPECT_EQ(requests_->FileRequest(Row("a"), anon, two).status().code(),
            StatusCode::kResourceExhausted);
  anon.address = "127.0.0.10";
  ASSERT_OK(requests_->FileRequest(Row("a"), anon, two).status());
}

TEST_F(RequestStoreTest, AStateMovesOnlyFromTheStateReadAndListsFilter) {
  auto filed = requests_->FileRequest(Row("k"), {.principal = "bob", .created_ms = 1}, {});
  ASSERT_OK(filed.status());
  RequestRow to = filed->first;
  to.state = 3;
  to.build_id = 7;
  to.job_id = 8;
  to.arch_list = "9.0";
  to.updated_ms = 5;
  auto moved = requests_->MoveRequest(1, to);
  ASSERT_OK(moved.status());
  EXPECT_TRUE(*moved);
  to.state = 2;
  moved = requests_->MoveRequest(1, to);  // no longer in state 1
  ASSERT_OK(moved.status());
  EXPECT_FALSE(*moved);
  auto row = requests_->GetRequest(to.id);
  ASSERT_OK(row.status());
  EXPECT_EQ(row->state, 3);
  EXPECT_EQ(row->build_id, 7);
  EXPECT_EQ(row->arch_list, "9.0");
  ASSERT_OK(
      requests_->FileRequest(Row("other"), {.principal = "bob", .created_ms = 2}, {}).status());
  auto building = requests_->ListRequests(3, 0, 10);
  ASSERT_OK(building.status());
  ASSERT_EQ(building->size(), 1u);
  EXPECT_EQ(building->at(0).id, to.id);
  EXPECT_EQ(requests_->GetRequest(999).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace farm::store
