// Bearer-token authentication and role checks for every RPC.
//
// Tokens are random strings shown once at creation; only their sha256 is stored. Roles are
// ordered viewer < submitter < admin for client calls; "enroll" tokens may only register
// workers, and "worker" tokens (issued by Register) may only make worker calls for their
// own worker id. Thread-safe.
#ifndef FARM_DAEMON_AUTH_TOKEN_AUTHORITY_H_
#define FARM_DAEMON_AUTH_TOKEN_AUTHORITY_H_

#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/store/store.h"

namespace farm::auth {

struct Principal {
  std::string name;
  std::string role;       // viewer, submitter, admin, enroll, worker
  std::string worker_id;  // for worker tokens
};

enum class Need { kViewer, kSubmitter, kAdmin, kEnroll, kWorker };

class TokenAuthority {
 public:
  TokenAuthority(store::Store* store, const Clock* clock) : store_(store), clock_(clock) {}

  // Creates a token for `role` and returns it; InvalidArgument for an unknown role or a
  // negative ttl. A token with ttl_ms > 0 stops working ttl_ms after now.
  Result<std::string> Create(const std::string& role, const std::string& name,
                             const std::string& worker_id = "", int64_t ttl_ms = 0);

  // Checks an "authorization" header value ("Bearer <token>"; empty when absent).
  // Unauthenticated when missing, unknown, revoked or expired; PermissionDenied when the
  // token's role is too weak for `need`. Known tokens are remembered (every heartbeat of
  // every worker is authorized, and the store's lock is the farm's bottleneck), so
  // revocations must go through Revoke, which takes effect at once.
  Result<Principal> Authorize(const std::string& authorization, Need need);
  // Authorize without the role check: the principal of any valid token, so that a
  // refusal for its role can be recorded with who asked (CheckRole).
  Result<Principal> Identify(const std::string& authorization);
  // PermissionDenied when `who`'s role is too weak for `need`.
  static Status CheckRole(const Principal& who, Need need);

  // The principal `name` acts as when no call carries its token (a schedule firing as
  // its creator): the strongest client role among its tokens that are neither revoked
  // nor expired. Unauthenticated when it has none: a principal whose tokens were all
  // revoked no longer acts.
  Result<Principal> PrincipalNamed(const std::string& name);

  // Revokes the token whose id starts with `hash_prefix` (Store::RevokeToken) and forgets
  // every remembered token. Returns the revoked row.
  Result<store::TokenRow> Revoke(const std::string& hash_prefix, int64_t now_ms);

  // farmd's first start (a store without any token): makes the bootstrap admin and enroll
  // tokens and writes them to <dir>/admin.token and <dir>/enroll.token (mode 0600). Does
  // nothing when the store holds a token.
  Status BootstrapTokens(const std::string& dir);

  // The id a token is listed and revoked by: the first 12 hex digits of its sha256.
  static std::string IdOf(const std::string& hash) { return hash.substr(0, 12); }

 private:
  static constexpr size_t kMaxRemembered = 100'000;  // a bound; beyond it, start afresh

  store::Store* store_;
  const Clock* clock_;
  std::mutex mu_;
  std::unordered_map<std::string, store::TokenRow> known_;  // by hash; guarded by mu_
};

}  // namespace farm::auth

#endif  // FARM_DAEMON_AUTH_TOKEN_AUTHORITY_H_
