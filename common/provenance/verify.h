// Deciding whether a wheel's provenance holds: each DSSE envelope must carry a valid
// signature by a key of the farm's key set that is not revoked, and each statement must
// name the wheel's exact sha256 and file name; the key set must not have expired, and the
// build statement must name the project owner asked for. One bad envelope refuses the wheel: a
// provenance file someone altered is not partly trusted.
//
//   auto verdict = VerifyWheel({name, sha256}, envelopes, keys, {.require_validated_arch =
//   "12.0"}); if (!verdict.ok) for (auto& p : verdict.problems) std::cerr << p << "\n";
#ifndef FARM_COMMON_PROVENANCE_VERIFY_H_
#define FARM_COMMON_PROVENANCE_VERIFY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/provenance/dsse.h"
#include "common/provenance/key_set.h"
#include "common/provenance/statement.h"

namespace farm::provenance {

// One envelope checked against a key set.
struct CheckedEnvelope {
  bool ok = false;
  std::string keyid;    // the key whose signature verified
  std::string problem;  // why it was refused, for people
  Statement statement;  // parsed only when the signature verified
};

// Verifies `e`'s signatures over PAE(payloadType, payload) and parses its statement.
// Refused: a payload type other than in-toto, no signature by a key of `keys`, a
// signature that does not verify, a key that is revoked (its date and reason are in the
// problem), or a statement that does not parse.
CheckedEnvelope CheckEnvelope(const Envelope& e, const KeySet& keys);

struct VerifyOptions {
  // A compute capability ("12.0", "sm_120", "sm120a"): a passed validation on a GPU of
  // exactly this capability is required. "" requires none.
  std::string require_validated_arch;
  // A principal (a token's name): the build statement must name it as the owner of the
  // wheel's project. "" requires none.
  std::string require_owner;
  // The owner of the wheel's project in the farm's record, when the verifier could ask the
  // farm ("" otherwise): a build statement naming another owner is refused (one signed
  // before projects had owners names none: a note says so).
  std::string recorded_owner;
  // Now, in Unix milliseconds: a key set that expired by then is refused. 0: not checked.
  int64_t now_ms = 0;
};

struct SignedValidation {
  ValidationSummary summary;
  std::string keyid;
};

struct WheelVerification {
  bool ok = false;
  std::vector<std::string> problems;  // why the wheel is refused; empty when ok
  std::vector<std::string> notes;     // what was seen but does not decide
  std::optional<BuildSummary> build;  // the first verified build statement
  std::string build_keyid;
  std::vector<SignedValidation> validations;
};

WheelVerification VerifyWheel(const Subject& wheel, const std::vector<Envelope>& envelopes,
                              const KeySet& keys, const VerifyOptions& options);

// "12.0" for "12.0", "12.0a", "sm_120", "sm120", "sm_120a", "120"; "" when `arch` is none
// of these.
std::string NormalizeComputeCapability(std::string_view arch);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_VERIFY_H_
