// The schema migrations compiled into farmd from daemon/store/sql/migrations/sqlite/NNN_name.sql.
// Each one is known by the number in its file name, never by its position in this list:
// the migration runner (migration_runner.h) sorts, checks and records them by number.
// The list is built at configure time and is immutable; safe to read from any thread.
#ifndef FARM_DAEMON_STORE_SQL_MIGRATIONS_H_
#define FARM_DAEMON_STORE_SQL_MIGRATIONS_H_

#include <string>
#include <vector>

namespace farm::store {

struct MigrationFile {
  std::string file_name;  // "007_compile_cache.sql"
  std::string sql;
};

// The migration files of this build, in file-name order.
const std::vector<MigrationFile>& Migrations();

// The PostgreSQL forms of the same migrations (daemon/store/sql/migrations/postgres/), one per file
// of Migrations() with the same name: same number, same meaning. The build fails when a migration
// lacks its PostgreSQL form.
const std::vector<MigrationFile>& PostgresMigrations();

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_MIGRATIONS_H_
