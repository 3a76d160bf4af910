// The schema migrations compiled into farmd from daemon/store/migrations/NNN_*.sql, in
// order; migration i (0-based) brings the schema to version i+1.
#ifndef FARM_DAEMON_STORE_MIGRATIONS_H_
#define FARM_DAEMON_STORE_MIGRATIONS_H_

#include <string>
#include <vector>

namespace farm::store {

const std::vector<std::string>& Migrations();

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_MIGRATIONS_H_
