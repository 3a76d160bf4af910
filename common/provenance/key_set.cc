#include "common/provenance/key_set.h"

#include <boost/json.hpp>
#include <set>

#include "common/clock.h"
#include "common/provenance/base64.h"
#include "common/provenance/ed25519.h"
#include "common/provenance/json_read.h"
#include "common/provenance/statement.h"

namespace farm::provenance {

namespace json = boost::json;

const char* KeyStateName(KeyState state) {
  switch (state) {
    case KeyState::kActive:
      return "active";
    case KeyState::kRetired:
      return "retired";
    case KeyState::kRevoked:
      return "revoked";
  }
  return "revoked";
}

std::optional<KeyState> ParseKeyState(std::string_view name) {
  for (KeyState s : {KeyState::kActive, KeyState::kRetired, KeyState::kRevoked}) {
    if (name == KeyStateName(s)) return s;
  }
  return std::nullopt;
}

const PublicKey* KeySet::Find(std::string_view keyid) const {
  for (const auto& k : keys) {
    if (k.keyid == keyid) return &k;
  }
  return nullptr;
}

const PublicKey* KeySet::Active() const {
  for (const auto& k : keys) {
    if (k.state == KeyState::kActive) return &k;
  }
  return nullptr;
}

Result<std::string> KeySetJson(const KeySet& set) {
  json::array keys;
  for (const auto& k : set.keys) {
    FARM_ASSIGN_OR_RETURN(std::string pem, Ed25519Key::PublicPemOf(k.public_raw));
    keys.push_back(json::object{{"keyid", k.keyid},
                                {"algorithm", "ed25519"},
                                {"public_key", Base64Encode(k.public_raw)},
                                {"public_key_pem", pem},
                                {"state", KeyStateName(k.state)},
                                {"created", k.created},
                                {"retired", k.retired},
                                {"revoked", k.revoked},
                                {"reason", k.reason}});
  }
  json::object doc{{"version", 1},
                   {"farm", set.farm_id},
                   {"builder_id", BuilderId(set.farm_id)},
                   {"keys", std::move(keys)}};
  if (!set.expires.empty()) doc["expires"] = set.expires;
  return json::serialize(doc) + "\n";
}

namespace {

// "2026-12-26T15:00:00.000Z": FormatRfc3339's form, so that two such times compare as text.
bool IsUtcTime(std::string_view t) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (t.size() != kShape.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    bool digit = t[i] >= '0' && t[i] <= '9';
    if (kShape[i] == 'd' ? !digit : t[i] != kShape[i]) return false;
  }
  return true;
}

Result<PublicKey> ParseKey(const json::value& v) {
  const json::object* o = v.if_object();
  if (o == nullptr) return Status::InvalidArgument("key set: a key is not an object");
  PublicKey k;
  FARM_ASSIGN_OR_RETURN(k.keyid, RequiredString(*o, "keyid", "key set"));
  std::string what = "key set: key " + k.keyid.substr(0, 64);
  FARM_ASSIGN_OR_RETURN(std::string algorithm, RequiredString(*o, "algorithm", what));
  if (algorithm != "ed25519") return Status::InvalidArgument(what + ": algorithm is not ed25519");
  FARM_ASSIGN_OR_RETURN(std::string b64, RequiredString(*o, "public_key", what));
  auto raw = Base64Decode(b64);
  if (!raw.ok() || raw->size() != kEd25519PublicKeyBytes) {
    return Status::InvalidArgument(what + ": public_key is not 32 bytes of Base64");
  }
  k.public_raw = std::move(raw).value();
  if (KeyIdOf(k.public_raw) != k.keyid) {
    return Status::InvalidArgument(what + ": keyid is not the SHA-256 of its public key");
  }
  auto state = ParseKeyState(OptionalString(*o, "state"));
  if (!state) return Status::InvalidArgument(what + ": unknown state");
  k.state = *state;
  k.created = OptionalString(*o, "created");
  k.retired = OptionalString(*o, "retired");
  k.revoked = OptionalString(*o, "revoked");
  k.reason = OptionalString(*o, "reason");
  return k;
}

}  // namespace

Result<KeySet> ParseKeySet(std::string_view text) {
  if (text.size() > kMaxKeySetBytes) return Status::InvalidArgument("key set: too large");
  FARM_ASSIGN_OR_RETURN(json::value doc, ParseJson(text, "key set"));
  const json::object* o = doc.if_object();
  if (o == nullptr) return Status::InvalidArgument("key set: not a JSON object");
  const json::value* version = o->if_contains("version");
  if (version == nullptr || !version->is_int64() || version->as_int64() != 1) {
    return Status::InvalidArgument("key set: version is not 1");
  }
  KeySet set;
  set.farm_id = OptionalString(*o, "farm");
  set.expires = OptionalString(*o, "expires");
  if (!set.expires.empty() && !IsUtcTime(set.expires)) {
    return Status::InvalidArgument(
        "key set: expires is not an RFC 3339 time in UTC as "
        "2026-12-26T15:00:00.000Z");
  }
  const json::array* keys = ArrayAt(*o, "keys");
  if (keys == nullptr) return Status::InvalidArgument("key set: no keys array");
  if (keys->size() > kMaxKeys) return Status::InvalidArgument("key set: too many keys");
  std::set<std::string> seen;
  for (const json::value& v : *keys) {
    FARM_ASSIGN_OR_RETURN(PublicKey k, ParseKey(v));
    if (!seen.insert(k.keyid).second) {
      return Status::InvalidArgument("key set: key " + k.keyid + " is listed twice");
    }
    set.keys.push_back(std::move(k));
  }
  return set;
}

std::string KeySetExpired(const KeySet& set, int64_t now_ms) {
  // Both in FormatRfc3339's fixed-width form (ParseKeySet checked it): they compare as text.
  if (set.expires.empty() || FormatRfc3339(now_ms) < set.expires) return "";
  return "the key set expired on " + set.expires +
         ": fetch it again from a source you trust (an expired copy may still list keys the "
         "farm has revoked since)";
}

Result<std::vector<std::string>> ApplyRevocations(KeySet* pinned, const KeySet& current) {
  if (pinned->farm_id != current.farm_id) {
    return Status::InvalidArgument("the farm's key set is of farm " + current.farm_id +
                                   ", the pinned one of farm " + pinned->farm_id);
  }
  std::vector<std::string> revoked;
  for (PublicKey& k : pinned->keys) {
    const PublicKey* now = current.Find(k.keyid);
    if (now == nullptr || now->state != KeyState::kRevoked || k.state == KeyState::kRevoked) {
      continue;
    }
    k.state = KeyState::kRevoked;
    k.revoked = now->revoked;
    k.reason = now->reason;
    revoked.push_back(k.keyid);
  }
  return revoked;
}

}  // namespace farm::provenance
