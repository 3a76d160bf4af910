// The farm's public signing keys as one JSON document: what farmd serves at
// /api/v1/provenance/keys, what `farmctl verify --keys` and the Python verifier read, and
// (with the private keys beside it) what the key ring keeps on disk.
//
//   {"version": 1, "farm": "<farm id>", "builder_id": "urn:gpu-wheel-farm:farm:<farm id>",
//    "keys": [{"keyid": "<hex sha256 of the raw key>", "algorithm": "ed25519",
//              "public_key": "<Base64 of the 32 raw bytes>", "public_key_pem": "...",
//              "state": "active|retired|revoked", "created": "RFC 3339",
//              "retired": "", "revoked": "", "reason": ""}]}
//
// A retired key signs nothing new but its signatures stay valid; a revoked key's
// signatures are refused.
#ifndef FARM_COMMON_PROVENANCE_KEY_SET_H_
#define FARM_COMMON_PROVENANCE_KEY_SET_H_

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
inline constexpr size_t kMaxKeySetBytes = 1 << 20;

struct KeySet {
  std::string farm_id;
  std::vector<PublicKey> keys;

  // The key with this id, nullptr when the set has none.
  const PublicKey* Find(std::string_view keyid) const;
  // The key that signs now, nullptr when none does.
  const PublicKey* Active() const;
};

// The document above.
Result<std::string> KeySetJson(const KeySet& set);

// Reads a key set. InvalidArgument for malformed JSON, a version other than 1, more than
// kMaxKeys keys, an algorithm other than ed25519, a public key that is not 32 bytes of
// Base64, a keyid that is not the SHA-256 of its key, a duplicate keyid, an unknown state.
Result<KeySet> ParseKeySet(std::string_view json);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_KEY_SET_H_
