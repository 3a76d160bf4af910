// The store the store tests run against: a SQLite file in the test's directory, or, in
// the PostgreSQL build of the same tests (store_pg_test), a fresh database on the test
// binary's PostgreSQL server. Opening again reopens the same database.
#ifndef FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_
#define FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_

#include <memory>
#include <string>

#include "daemon/store/sqlite_db.h"
#include "daemon/store/store.h"

namespace farm::store {

class StoreUnderTest {
 public:
  explicit StoreUnderTest(std::string dir) : dir_(std::move(dir)) {}
  Result<std::unique_ptr<Store>> Open();
  // A plain connection to the same database, for what the Store interface does not show
  // (rows written by older farmds, sizes on disk).
  Result<std::unique_ptr<Db>> OpenDb();

 private:
  std::string dir_;
  std::string url_;
};

}  // namespace farm::store

#endif  // FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_
