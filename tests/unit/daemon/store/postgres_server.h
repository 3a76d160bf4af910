// A throwaway PostgreSQL server for tests: initdb into a temporary directory and a postgres
// listening only on a unix socket in it (no TCP port to collide with), from Debian's
// postgresql package. PostgreSQL refuses to run as root, and the tests run as root on CI:
// then initdb and postgres run as the unprivileged user "nobody" through util-linux's
// setpriv (--reuid/--regid/--clear-groups, and --pdeathsig so the server dies with the
// test process), and the temporary directory is handed to that user.
#ifndef FARM_TESTS_UNIT_DAEMON_STORE_POSTGRES_SERVER_H_
#define FARM_TESTS_UNIT_DAEMON_STORE_POSTGRES_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace farm::testing {

class PostgresServer {
 public:
  // NotFound, with the reason, when the server binaries (or, as root, setpriv and the
  // user nobody) are missing: the caller skips. Any other error is a failure.
  static Result<std::unique_ptr<PostgresServer>> Start();
  // Stops the server (immediate shutdown) and removes its directory.
  ~PostgresServer();

  // Creates an empty database and returns its libpq URL.
  Result<std::string> CreateDatabase();

 private:
  PostgresServer() = default;
  std::string dir_;
  pid_t pid_ = -1;
  int next_db_ = 0;
};

// The server of this test binary; null until set by its main.
PostgresServer* SharedPostgres();
void SetSharedPostgres(PostgresServer* server);

}  // namespace farm::testing

#endif  // FARM_TESTS_UNIT_DAEMON_STORE_POSTGRES_SERVER_H_
