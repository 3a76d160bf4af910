// Attestor: the statements farmd signs about its wheels (docs/provenance.md), kept in the
// store next to them. The build statement is signed when the wheel arrives (UploadArtifact),
// a validation statement when a report that passed or failed arrives (CompleteJob), and a
// published wheel that was relabelled gets its statements rebound to the new bytes. Readers
// (the index, the publishers) get a wheel's envelopes by its sha256.
//
// Key management goes through here too, so that revoking a key re-signs what it signed:
// every stored statement keeps verifying with the farm's current keys.
//
// Thread-safe: the store and the key ring are.
#ifndef FARM_DAEMON_ATTEST_ATTESTOR_H_
#define FARM_DAEMON_ATTEST_ATTESTOR_H_

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/provenance/dsse.h"
#include "common/provenance/key_ring.h"
#include "common/provenance/statement.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::attest {

// Envelopes of one wheel at most (a build and its validations).
inline constexpr int kMaxEnvelopesPerWheel = 64;

class Attestor {
 public:
  Attestor(store::Store* store, provenance::KeyRing* keys, const Clock* clock)
      : store_(store), keys_(keys), clock_(clock) {}

  // Signs and stores the build statement of `artifact` (a wheel just stored). Repeating
  // it for the same job attempt stores nothing new.
  Status AttestBuild(const store::ArtifactRow& artifact);

  // Signs and stores a validation statement for each wheel `report` is about: the
  // artifacts of `job`'s attempt for a build job, of its target attempt for a validation
  // job. Reports that neither passed nor failed attest nothing.
  Status AttestValidation(const store::JobRow& job, int attempt,
                          const farm::v1::ValidationReport& report, const std::string& worker_id);

  // For a published copy of a wheel with a new label: the statements of `from_sha256`,
  // rebound to `to` (the validated bytes stay named as such), signed and stored, unless
  // `to` has statements already.
  Status AttestRelabelled(const std::string& from_sha256, const provenance::Subject& to);

  // The wheel's envelopes, build statement first. Empty when farmd signed none (a wheel
  // stored before provenance existed).
  Result<std::vector<provenance::Envelope>> Envelopes(const std::string& sha256);

  // The key set as served; a new active key; a revocation, after which every statement the
  // revoked key signed is signed again with the active key. Returns the key changed.
  Result<std::string> KeysJson() const { return keys_->KeysJson(); }
  const std::string& farm_id() const { return keys_->farm_id(); }
  Result<provenance::PublicKey> RotateKey();
  Result<provenance::PublicKey> RevokeKey(const std::string& keyid_prefix,
                                          const std::string& reason);
  // Raw Ed25519 signature (and the key's id) of a file such as SHA256SUMS.
  Result<std::pair<std::string, std::string>> SignBytes(std::string_view bytes) const {
    return keys_->SignBytes(bytes);
  }

 private:
  Status SignAndKeep(const std::string& sha256, const std::string& kind, int64_t job_id,
                     int attempt, const std::string& statement);
  Result<int> Resign(const std::string& keyid);

  store::Store* store_;
  provenance::KeyRing* keys_;
  const Clock* clock_;
};

}  // namespace farm::attest

#endif  // FARM_DAEMON_ATTEST_ATTESTOR_H_
