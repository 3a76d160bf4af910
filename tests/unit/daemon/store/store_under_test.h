// The store the store tests run against: a SQLite file in the test's directory, or, in
// the PostgreSQL build of the same tests (store_pg_test), a fresh database on the test
// binary's PostgreSQL server. Opening again reopens the same database.
#ifndef FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_
#define FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_

#include <memory>
#include <string>

#include "daemon/store/sql/db.h"
#include "daemon/store/sql/migrations.h"
#include "daemon/store/store.h"

namespace farm::store {

class StoreUnderTest {
 public:
  explicit StoreUnderTest(std::string dir) : dir_(std::move(dir)) {}
  Result<std::unique_ptr<Store>> Open();
  // The same database as a bare connection with no migration applied by opening it, and
  // the migration files of its dialect: for tests that stop the schema at an older
  // version, write rows as they were, and then Open() to migrate the rest.
  Result<std::unique_ptr<Db>> OpenDb();
  static const std::vector<MigrationFile>& MigrationFiles();

 private:
  Status MakeDatabase();  // PostgreSQL: the test's database, made once

  std::string dir_;
  std::string url_;
};

}  // namespace farm::store

#endif  // FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_
