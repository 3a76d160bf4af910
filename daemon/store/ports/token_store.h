// TokenStore: the API tokens farmd checks requests against, stored by hash (the secret
// itself is never stored).
#ifndef FARM_DAEMON_STORE_PORTS_TOKEN_STORE_H_
#define FARM_DAEMON_STORE_PORTS_TOKEN_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

struct TokenRow {
  std::string hash;
  std::string name;
  std::string role;
  std::string worker_id;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never expires
  int64_t revoked_ms = 0;  // 0: not revoked
};

class TokenStore {
 public:
  virtual ~TokenStore() = default;

  virtual Status InsertToken(const TokenRow& token) = 0;
  // NotFound when no token has this hash.
  virtual Result<TokenRow> FindToken(const std::string& hash) = 0;
  virtual Result<int64_t> CountTokens() = 0;
  // Every token (worker tokens too), oldest first.
  virtual Result<std::vector<TokenRow>> ListTokens() = 0;
  // Marks the token whose hash starts with `hash_prefix` (at least 8 hex digits) revoked
  // at now_ms. NotFound when none matches, InvalidArgument when several do or the prefix
  // is short, FailedPrecondition when it is already revoked.
  virtual Result<TokenRow> RevokeToken(const std::string& hash_prefix, int64_t now_ms) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_TOKEN_STORE_H_
