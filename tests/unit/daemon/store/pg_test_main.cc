// main of store_pg_test: one PostgreSQL server for the whole binary (each test gets a fresh
// database on it). Exits 77, which ctest reports as skipped, when the server binaries are
// missing, saying why.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/unit/daemon/store/postgres_server.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();  // lists; needs no server
  auto server = farm::testing::PostgresServer::Start();
  if (!server.ok()) {
    bool missing = server.status().code() == farm::StatusCode::kNotFound;
    std::cout << (missing ? "SKIPPED: " : "cannot start PostgreSQL: ") << server.status().message()
              << "\n";
    return missing ? 77 : 1;
  }
  farm::testing::SetSharedPostgres(server.value().get());
  int rc = RUN_ALL_TESTS();
  farm::testing::SetSharedPostgres(nullptr);
  return rc;
}
