// The PostgreSQL backend of Db (db.h), over libpq. The store's queries are written
// in SQLite's dialect; Prepare translates what PostgreSQL spells differently:
//   ?, ?NNN                    -> $1, $2, ..., $NNN (outside string literals)
//   INSERT OR IGNORE INTO ...  -> INSERT INTO ... ON CONFLICT DO NOTHING
//   INSERT OR REPLACE INTO t(c, ...) ... -> INSERT INTO t(c, ...) ... ON CONFLICT (<t's
//                                 primary key>) DO UPDATE SET c = EXCLUDED.c, ...
//   MAX(a, b), MIN(a, b)       -> GREATEST(a, b), LEAST(a, b) (the two-argument scalars;
//                                 one-argument aggregates are left alone)
// Integers are bound as text and typed by the server from their use; text is bound in
// binary form (no escaping, and a NUL byte is an error rather than a silent cut); blobs as
// bytea. Results come back as text; a bytea column reads back as its bytes. The schema
// (migrations/postgres/) makes every integer BIGINT, since times are milliseconds.
#ifndef FARM_DAEMON_STORE_SQL_PG_DB_H_
#define FARM_DAEMON_STORE_SQL_PG_DB_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "daemon/store/sql/db.h"

namespace farm::store {

// The primary key columns of a table, for INSERT OR REPLACE.
using PrimaryKeyFn = std::function<Result<std::vector<std::string>>(const std::string& table)>;

// `sql` in SQLite's dialect as PostgreSQL reads it (see above). Pure; for tests too.
Result<std::string> TranslateToPostgres(std::string_view sql, const PrimaryKeyFn& primary_key);

// Connects to `url` (postgres://user@host:port/db?..., any libpq connection URI or
// key=value string) and applies nothing yet. The error names the server's reason. Unless
// the URL says otherwise, a connection to a server that stopped answering fails within
// about 30 s (TCP keepalives, tcp_user_timeout) rather than blocking.
//
// A lost connection fails the statement that finds it lost (Unavailable). With
// `reconnect`, the next statement outside a transaction connects again (once per
// statement, within the same time limits); statements of a transaction that was open on
// the lost connection fail until it ends, so none of them commits alone. Without it (a
// connection whose session state matters, such as an advisory lock), every later
// statement fails.
Result<std::unique_ptr<Db>> OpenPgDb(const std::string& url, bool reconnect = true);

// Holds PostgreSQL's session advisory lock that marks the one active farmd of a database,
// on `db`'s connection, for as long as the connection lives. When another session holds
// it, calls `on_standby` once and waits (without a time limit) until that session ends.
// `db` must come from OpenPgDb.
Status WaitForActiveLock(Db& db, const std::function<void()>& on_standby);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_PG_DB_H_
