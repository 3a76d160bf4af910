// The store the store tests run against: a SQLite file in the test's directory, or, in
// the PostgreSQL build of the same tests (store_pg_test), a fresh database on the test
// binary's PostgreSQL server. Opening again reopens the same database.
#ifndef FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_
#define FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/store/sql/db.h"
#include "daemon/store/sql/migrations.h"
#include "daemon/store/store.h"
#include "tests/support/test_util.h"

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

// What a worker reports when attempt `attempt` of job `job_id` ended in an infrastructure
// failure (exit code 1), for a job allowed three attempts: a failure the store requeues.
inline CompletionReport InfraFailure(int64_t job_id, int attempt, const std::string& worker_id,
                                     int64_t retry_not_before_ms = 0) {
  return {.job_id = job_id,
          .attempt = attempt,
          .worker_id = worker_id,
          .cause = kCauseInfrastructure,
          .exit_code = 1,
          .max_attempts = 3,
          .retry_not_before_ms = retry_not_before_ms};
}

// The fixture of the store suite: the store under test, opened before each test.
class StoreTest : public ::testing::Test {
 protected:
  // Opens the store, then runs the test's own SetUpOnStore (only once the store is open).
  void SetUp() final {
    Reopen();
    if (!HasFatalFailure()) SetUpOnStore();
  }
  virtual void SetUpOnStore() {}

  // Closes the store and opens the same database again, as a restarted farmd would.
  void Reopen() {
    store_.reset();
    auto opened = under_test_.Open();
    ASSERT_OK(opened.status());
    store_ = std::move(opened).value();
  }

  testing::ScopedTempDir dir_;
  StoreUnderTest under_test_{dir_.path()};
  std::unique_ptr<Store> store_;
};

}  // namespace farm::store

#endif  // FARM_TESTS_UNIT_DAEMON_STORE_STORE_UNDER_TEST_H_
