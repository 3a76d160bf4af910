#include "common/provenance/key_ring.h"

#include <sys/stat.h>

#include <filesystem>

#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"

namespace farm::provenance {
namespace {

constexpr char kKeysFile[] = "keys.json";
constexpr size_t kMinPrefix = 8;

// FailedPrecondition when `path` is readable or writable by group or others.
Status CheckPrivate(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound("no " + path);
  if (st.st_mode & 077) {
    return Status::FailedPrecondition(path + " is accessible to other users; chmod " + "600 it");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<KeyRing>> KeyRing::Open(const std::string& dir, const Clock& clock) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir, 0700));  // also takes back a directory opened up
  std::unique_ptr<KeyRing> ring(new KeyRing(dir, clock));
  if (fs::Exists(dir + "/" + kKeysFile)) {
    FARM_RETURN_IF_ERROR(ring->Load());
  } else {
    FARM_RETURN_IF_ERROR(ring->Create());
  }
  return ring;
}

Status KeyRing::Load() {
  const std::string path = dir_ + "/" + kKeysFile;
  FARM_RETURN_IF_ERROR(CheckPrivate(path));
  FARM_ASSIGN_OR_RETURN(std::string text, fs::ReadFile(path));
  auto set = ParseKeySet(text);
  if (!set.ok()) return Status::FailedPrecondition(path + ": " + set.status().message());
  const PublicKey* active = set->Active();
  if (active == nullptr || set->farm_id.empty()) {
    return Status::FailedPrecondition(path + " names no active key or no farm id");
  }
  const std::string pem_path = dir_ + "/" + active->keyid + ".pem";
  FARM_RETURN_IF_ERROR(CheckPrivate(pem_path).WithContext("the active signing key"));
  FARM_ASSIGN_OR_RETURN(std::string pem, fs::ReadFile(pem_path));
  auto key = Ed25519Key::FromPrivatePem(pem);
  if (!key.ok()) return Status::FailedPrecondition(pem_path + ": " + key.status().message());
  if ((*key)->key_id() != active->keyid) {
    return Status::FailedPrecondition(pem_path + " holds key " + (*key)->key_id() +
                                      ", not the active key " + active->keyid);
  }
  farm_id_ = set->farm_id;
  set_ = std::move(set).value();
  active_ = std::move(key).value();
  return Status::Ok();
}

Status KeyRing::Create() {
  KeySet next;
  next.farm_id = RandomHex(8);
  farm_id_ = next.farm_id;
  FARM_ASSIGN_OR_RETURN(auto key, NewKeyInto(&next));
  std::string keyid = key->key_id();
  FARM_RETURN_IF_ERROR(Commit(std::move(next), std::move(key)));
  log::Info("first start: created the provenance signing key " + keyid + " in " + dir_ +
            " (mode 0600)");
  return Status::Ok();
}

Result<std::unique_ptr<Ed25519Key>> KeyRing::NewKeyInto(KeySet* next) {
  FARM_ASSIGN_OR_RETURN(auto key, Ed25519Key::Generate());
  next->keys.push_back(PublicKey{.keyid = key->key_id(),
                                 .public_raw = key->public_raw(),
                                 .state = KeyState::kActive,
                                 .created = FormatRfc3339(clock_.NowUnixMs())});
  return key;
}

Status KeyRing::Commit(KeySet next, std::unique_ptr<Ed25519Key> key) {
  std::string old_keyid = active_ ? active_->key_id() : "";
  if (key) {
    FARM_ASSIGN_OR_RETURN(std::string pem, key->PrivatePem());
    FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir_ + "/" + key->key_id() + ".pem", pem, 0600));
  }
  FARM_ASSIGN_OR_RETURN(std::string text, KeySetJson(next));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir_ + "/" + kKeysFile, text, 0600));
  if (key && !old_keyid.empty()) {
    // The retired key signs nothing again: its private half has no further use.
    std::error_code ec;
    std::filesystem::remove(dir_ + "/" + old_keyid + ".pem", ec);
    if (ec) log::Warn("cannot remove the retired key " + old_keyid + ": " + ec.message());
  }
  set_ = std::move(next);
  if (key) active_ = std::move(key);
  return Status::Ok();
}

KeySet KeyRing::Keys() const {
  std::lock_guard lock(mu_);
  return set_;
}

Result<std::string> KeyRing::KeysJson() const {
  KeySet served = Keys();
  served.expires = FormatRfc3339(clock_.NowUnixMs() + kServedKeySetValidityMs);
  return KeySetJson(served);
}

Result<Envelope> KeyRing::SignStatement(std::string_view statement_json) const {
  std::lock_guard lock(mu_);
  return SignEnvelope(*active_, kInTotoPayloadType, statement_json);
}

Result<std::pair<std::string, std::string>> KeyRing::SignBytes(std::string_view bytes) const {
  std::lock_guard lock(mu_);
  FARM_ASSIGN_OR_RETURN(std::string sig, active_->Sign(bytes));
  return std::pair{active_->key_id(), std::move(sig)};
}

Result<PublicKey> KeyRing::Rotate() {
  std::lock_guard lock(mu_);
  KeySet next = set_;
  std::string now = FormatRfc3339(clock_.NowUnixMs());
  for (auto& k : next.keys) {
    if (k.state == KeyState::kActive) {
      k.state = KeyState::kRetired;
      k.retired = now;
    }
  }
  FARM_ASSIGN_OR_RETURN(auto key, NewKeyInto(&next));
  PublicKey made = next.keys.back();
  FARM_RETURN_IF_ERROR(Commit(std::move(next), std::move(key)));
  log::Info("provenance signing key rotated: " + made.keyid + " signs from now on");
  return made;
}

Result<PublicKey> KeyRing::Revoke(std::string_view prefix, const std::string& reason) {
  if (prefix.size() < kMinPrefix) {
    return Status::InvalidArgument("name a key by at least " + std::to_string(kMinPrefix) +
                                   " characters of its id");
  }
  std::string keyid;
  bool active = false;
  {
    std::lock_guard lock(mu_);
    for (const auto& k : set_.keys) {
      if (!k.keyid.starts_with(prefix)) continue;
      if (!keyid.empty())
        return Status::InvalidArgument("several keys start with " + std::string(prefix));
      keyid = k.keyid;
      active = k.state == KeyState::kActive;
      if (k.state == KeyState::kRevoked) {
        return Status::FailedPrecondition("key " + k.keyid + " was revoked already on " +
                                          k.revoked);
      }
    }
  }
  if (keyid.empty()) return Status::NotFound("no signing key starts with " + std::string(prefix));
  if (active) FARM_RETURN_IF_ERROR(Rotate().status());
  std::lock_guard lock(mu_);
  KeySet next = set_;
  PublicKey revoked;
  for (auto& k : next.keys) {
    if (k.keyid != keyid) continue;
    k.state = KeyState::kRevoked;
    k.revoked = FormatRfc3339(clock_.NowUnixMs());
    k.reason = reason;
    revoked = k;
  }
  FARM_RETURN_IF_ERROR(Commit(std::move(next), nullptr));
  log::Warn("provenance signing key " + keyid + " revoked: " + reason);
  return revoked;
}

}  // namespace farm::provenance
