// The fixture of tests of what sits on the store: a SQLite store in a fresh directory and a
// fake clock. Header-only: the tests that use it link the store themselves.
#ifndef FARM_TESTS_SUPPORT_SQLITE_STORE_TEST_H_
#define FARM_TESTS_SUPPORT_SQLITE_STORE_TEST_H_

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"

namespace farm::testing {

class SqliteStoreTest : public ::testing::Test {
 protected:
  // Opens <dir_>/farm.db, then runs the test's own SetUpOnStore (only once the store is
  // open: a failure to open it ends the test there).
  void SetUp() final {
    auto opened = store::OpenSqliteStore(dir_.path() + "/farm.db");
    ASSERT_OK(opened.status());
    store_ = std::move(opened).value();
    SetUpOnStore();
  }
  virtual void SetUpOnStore() {}

  ScopedTempDir dir_;
  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_SQLITE_STORE_TEST_H_
