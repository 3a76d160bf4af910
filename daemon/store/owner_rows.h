// Rows of recipe-name ownership and of the audit log (migration 019), part of store.h.
#ifndef FARM_DAEMON_STORE_OWNER_ROWS_H_
#define FARM_DAEMON_STORE_OWNER_ROWS_H_

#include <cstdint>
#include <string>

namespace farm::store {

// A recipe name and the principal (a token's name) that owns it.
struct RecipeNameRow {
  std::string name;
  std::string owner;
  int64_t claimed_ms = 0;  // when its first owner claimed it
  int64_t updated_ms = 0;  // when it last changed owner
};

// One mutation someone asked for, allowed or not. Holds no token or secret: `principal`
// is a token's name and `detail` is redacted by whoever writes it.
struct AuditRow {
  int64_t id = 0;
  int64_t time_ms = 0;
  std::string principal;
  std::string role;
  std::string action;   // audit::ActionName
  std::string target;   // "build 12", "recipe attn-example"
  std::string outcome;  // audit::OutcomeName: ok, denied, failed
  std::string detail;
};

// Which audit rows a listing shows: newest first, ids < before_id (0: from the newest), at
// most `limit`, only `principal`'s when set.
struct AuditFilter {
  std::string principal;
  int64_t before_id = 0;
  int limit = 50;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_OWNER_ROWS_H_
