// Brings a SQLite or PostgreSQL database to the newest schema. A migration is known by the
// number in its file name (NNN_name.sql), not by where the file sorts: the runner records each one
// it applies, number and file name, in the table schema_migrations, applies the missing
// ones in numeric order (each in its own transaction, with its bookkeeping row) and never
// applies a recorded one again. It refuses to run, naming what is wrong, when the files
// have a duplicate or missing number, or when the database recorded a number under a
// different file name.
//
// Databases made before migrations were recorded by number kept only PRAGMA user_version
// = N, meaning "the first N files, by position". The runner adopts such a database once:
// it checks that its tables, columns and indexes include what files 1..N create (built
// in an in-memory database for comparison), then records 1..N. A database whose schema
// does not match (a file was renumbered since it was made) is refused, not migrated.
//
// user_version is still set to the highest applied number, so an older farmd refuses a
// database that is newer than it. Functions here take the Db and are not thread-safe;
// concurrent processes are serialized by the IMMEDIATE transactions.
//
// On PostgreSQL (Db::dialect()) there is no user_version and nothing to adopt:
// schema_migrations alone records what was applied, and an older farmd refuses a database
// that has a number it lacks. Concurrent farmds are serialized by an advisory lock that
// the PostgreSQL Db's Migrate holds around the runner.
#ifndef FARM_DAEMON_STORE_SQL_MIGRATION_RUNNER_H_
#define FARM_DAEMON_STORE_SQL_MIGRATION_RUNNER_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/sql/db.h"
#include "daemon/store/sql/migrations.h"

namespace farm::store {

struct Migration {
  int number = 0;
  std::string file_name;
  std::string sql;
};

// On success returns `files` sorted by number, numbered 1..N without gap or duplicate.
// Fails with InvalidArgument naming the offending files otherwise, or when a name is not
// NNN_name.sql.
Result<std::vector<Migration>> PlanMigrations(const std::vector<MigrationFile>& files);

// Applies to `db` every migration of `files` it has not recorded (see above). On success
// the database has all of them recorded. Fails with FailedPrecondition when the file set
// is inconsistent, when the database recorded a number under another file name or a
// number no file has, or when a pre-numbering database does not match its files;
// a failed migration is rolled back and named in the error.
Status MigrateSchema(Db& db, const std::vector<MigrationFile>& files);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_MIGRATION_RUNNER_H_
