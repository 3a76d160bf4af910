#include "tests/unit/daemon/store/store_under_test.h"

#ifdef FARM_STORE_TEST_POSTGRES
#include "daemon/store/sql/pg_db.h"
#include "daemon/store/sql_store/postgres.h"
#include "tests/unit/daemon/store/postgres_server.h"
#endif

namespace farm::store {

Status StoreUnderTest::MakeDatabase() {
#ifdef FARM_STORE_TEST_POSTGRES
  if (url_.empty()) {
    if (!testing::SharedPostgres()) return Status::FailedPrecondition("no PostgreSQL server");
    FARM_ASSIGN_OR_RETURN(url_, testing::SharedPostgres()->CreateDatabase());
  }
#endif
  return Status::Ok();
}

Result<std::unique_ptr<Store>> StoreUnderTest::Open() {
#ifdef FARM_STORE_TEST_POSTGRES
  FARM_RETURN_IF_ERROR(MakeDatabase());
  return OpenPostgresStore(url_);
#else
  return OpenSqliteStore(dir_ + "/farm.db");
#endif
}

Result<std::unique_ptr<Db>> StoreUnderTest::OpenDb() {
#ifdef FARM_STORE_TEST_POSTGRES
  FARM_RETURN_IF_ERROR(MakeDatabase());
  return OpenPgDb(url_);
#else
  return Db::Open(dir_ + "/farm.db");
#endif
}

const std::vector<MigrationFile>& StoreUnderTest::MigrationFiles() {
#ifdef FARM_STORE_TEST_POSTGRES
  return PostgresMigrations();
#else
  return Migrations();
#endif
}

}  // namespace farm::store
