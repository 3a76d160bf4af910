// KeyRing: the farm's signing keys, kept like farmd's other secrets. In its directory
// (<data-dir>/provenance, mode 0700): keys.json, the key set (key_set.h) with every key
// ever used and its state, and <keyid>.pem, the private half of the active key (mode
// 0600). The first Open() creates the farm's id and its first key.
//
// Rotate() makes a new active key; the old one is retired: its private half is deleted,
// and what it signed keeps verifying. Revoke() marks a key revoked, after which verifiers
// refuse its signatures; revoking the active key rotates first. Changes are written before
// they take effect (the new private key, then keys.json atomically), so a crash leaves
// either the old or the new ring.
//
// Thread-safe. One farmd owns a directory (a standby farmd needs a copy of it).
#ifndef FARM_COMMON_PROVENANCE_KEY_RING_H_
#define FARM_COMMON_PROVENANCE_KEY_RING_H_

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/provenance/dsse.h"
#include "common/provenance/ed25519.h"
#include "common/provenance/key_set.h"
#include "common/status.h"

namespace farm::provenance {

class KeyRing {
 public:
  // Opens (or on first use creates) the ring in `dir`, setting the directory's mode to
  // 0700. FailedPrecondition when a key file is open to other users, when keys.json is unreadable,
  // or when the active key's private half is missing or does not match its id.
  static Result<std::unique_ptr<KeyRing>> Open(const std::string& dir, const Clock& clock);

  const std::string& farm_id() const { return farm_id_; }
  // A copy of the public key set, and the same as JSON as farmd serves it: expiring
  // kServedKeySetValidityMs from now (key_set.h).
  KeySet Keys() const;
  Result<std::string> KeysJson() const;

  // A DSSE envelope of an in-toto statement, signed with the active key.
  Result<Envelope> SignStatement(std::string_view statement_json) const;
  // The raw Ed25519 signature of `bytes` with the active key, and that key's id.
  Result<std::pair<std::string, std::string>> SignBytes(std::string_view bytes) const;

  // A new active key; the previous one is retired. Returns the new key.
  Result<PublicKey> Rotate();
  // Revokes the key whose id starts with `keyid_prefix` (at least 8 characters, matching
  // one key). NotFound / InvalidArgument otherwise; FailedPrecondition when it is revoked
  // already. Returns the revoked key.
  Result<PublicKey> Revoke(std::string_view keyid_prefix, const std::string& reason);

 private:
  KeyRing(std::string dir, const Clock& clock) : dir_(std::move(dir)), clock_(clock) {}
  Status Load();
  Status Create();
  // Writes `key`'s private half (when given), then `next` as keys.json, then deletes the
  // private half of the key `key` replaces; the ring takes `next` and `key` on success.
  // REQUIRES: mu_ held, or the ring not yet shared.
  Status Commit(KeySet next, std::unique_ptr<Ed25519Key> key);
  Result<std::unique_ptr<Ed25519Key>> NewKeyInto(KeySet* next);

  const std::string dir_;
  const Clock& clock_;
  std::string farm_id_;
  mutable std::mutex mu_;
  KeySet set_;                          // guarded by mu_
  std::unique_ptr<Ed25519Key> active_;  // guarded by mu_
};

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_KEY_RING_H_
