// The farm's public signing keys as one JSON document: what farmd serves at
// /api/v1/provenance/keys, what `farmctl verify --keys` and the Python verifier read, and
// (with the private keys beside it) what the key ring keeps on disk.
//
//   {"version": 1, "farm": "<farm id>", "builder_id": "urn:gpu-wheel-farm:farm:<farm id>",
//    "keys": [{"keyid": "<hex sha256 of the raw key>", "algorithm": "ed25519",
//              "public_key": "<Base64 of the 32 raw bytes>", "public_key_pem": "...",
//              "state": "active|retired|revoked", "created": "RFC 3339",
//              "retired": "", "revoked": "", "reason": ""}],
//    "expires": "RFC 3339"}
//
// A retired key signs nothing new but its signatures stay valid; a revoked key's
// signatures are refused. A set farmd serves expires (kServedKeySetValidityMs after it was
// served): a copy pinned before a revocation cannot go on accepting the revoked key past
// that date, and verifiers that can reach the farm apply its revocations to a pinned set
// at once (ApplyRevocations). A set without "expires" (farmd's own file) never expires.
#ifndef FARM_COMMON_PROVENANCE_KEY_SET_H_
#define FARM_COMMON_PROVENANCE_KEY_SET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::provenance {

enum class KeyState { kActive, kRetired, kRevoked };

// "active", "retired", "revoked".
const char* KeyStateName(KeyState state);
std::optional<KeyState> ParseKeyState(std::string_view name);

struct PublicKey {
  std::string keyid;
  std::string public_raw;  // 32 bytes
  KeyState state = KeyState::kActive;
  std::string created;  // RFC 3339
  std::string retired;  // "" unless retired (or revoked after being retired)
  std::string revoked;  // "" unless revoked
  std::string reason;   // why it was revoked
};

inline constexpr size_t kMaxKeys = 256;
inline constexpr int64_t kServedKeySetValidityMs = 30LL * 24 * 3600 * 1000;
inline constexpr size_t kMaxKeySetBytes = 1 << 20;

struct KeySet {
  std::string farm_id;
  std::vector<PublicKey> keys;
  std::string expires;  // RFC 3339; "" never expires

  // The key with this id, nullptr when the set has none.
  const PublicKey* Find(std::string_view keyid) const;
  // The key that signs now, nullptr when none does.
  const PublicKey* Active() const;
};

// The document above.
Result<std::string> KeySetJson(const KeySet& set);

// Reads a key set. InvalidArgument for malformed JSON, a version other than 1, more than
// kMaxKeys keys, an algorithm other than ed25519, a public key that is not 32 bytes of
// Base64, a keyid that is not the SHA-256 of its key, a duplicate keyid, an unknown state,
// an "expires" that is not an RFC 3339 time.
Result<KeySet> ParseKeySet(std::string_view json);

// Empty when `set` may be used at `now_ms`; otherwise why not (it expired, and when).
std::string KeySetExpired(const KeySet& set, int64_t now_ms);

// Marks each key of `pinned` that `current` (the farm's key set as it stands, fetched
// with the wheel) lists as revoked as revoked too, with its date and reason. A revocation
// only ever refuses more, so `current` needs no more trust than the server it came from;
// keys and other states of `current` are ignored. Returns the ids newly revoked.
// InvalidArgument when the two sets belong to different farms.
Result<std::vector<std::string>> ApplyRevocations(KeySet* pinned, const KeySet& current);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_KEY_SET_H_
