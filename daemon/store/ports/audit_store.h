// AuditStore: the audit log (migration 019): every mutation someone asked for, allowed or
// not.
#ifndef FARM_DAEMON_STORE_PORTS_AUDIT_STORE_H_
#define FARM_DAEMON_STORE_PORTS_AUDIT_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

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

class AuditStore {
 public:
  virtual ~AuditStore() = default;

  // Appends a record; fills in its id.
  virtual Status InsertAudit(AuditRow* row) = 0;
  virtual Result<std::vector<AuditRow>> ListAudit(const AuditFilter& filter) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_AUDIT_STORE_H_
