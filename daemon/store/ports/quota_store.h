// QuotaStore: per-principal quota overrides and what each principal holds now.
#ifndef FARM_DAEMON_STORE_PORTS_QUOTA_STORE_H_
#define FARM_DAEMON_STORE_PORTS_QUOTA_STORE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace farm::store {

inline constexpr int64_t kQuotaUnlimited = -1;
inline constexpr int64_t kQuotaRoleDefault = -2;  // an override that defers to the role

// An admin's override of one principal's limits (daemon/quota/): each value a limit,
// kQuotaUnlimited, or kQuotaRoleDefault.
struct QuotaOverrideRow {
  std::string principal;  // a token name
  int64_t submissions = kQuotaRoleDefault;
  int64_t queued_jobs = kQuotaRoleDefault;
  int64_t stored_bytes = kQuotaRoleDefault;
  std::string updated_by;
  int64_t updated_ms = 0;
};

// What a principal holds now (kept as rows change, so reading it is one lookup).
struct PrincipalUsage {
  int64_t queued_jobs = 0;  // pending and running jobs of its builds
  // Its builds' recipes, log text and wheels (not the copies of reused or merged jobs),
  // and the source archives it uploaded.
  int64_t stored_bytes = 0;
};

class QuotaStore {
 public:
  virtual ~QuotaStore() = default;

  // The principal's override, nullopt when it has none.
  virtual Result<std::optional<QuotaOverrideRow>> GetQuotaOverride(
      const std::string& principal) = 0;
  // Stores the override; one whose three values are all kQuotaRoleDefault is removed.
  virtual Status SetQuotaOverride(const QuotaOverrideRow& row) = 0;
  // What `principal` holds now.
  virtual Result<PrincipalUsage> GetPrincipalUsage(const std::string& principal) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_QUOTA_STORE_H_
