#include "common/provenance/verify.h"

#include <cctype>

namespace farm::provenance {
namespace {

std::string Short(const std::string& keyid) { return keyid.substr(0, 16); }

std::string RevokedProblem(const PublicKey& k) {
  return "signed by key " + Short(k.keyid) + ", which was revoked on " + k.revoked +
         (k.reason.empty() ? "" : " (" + k.reason + ")") + ": its signatures are refused";
}

}  // namespace

CheckedEnvelope CheckEnvelope(const Envelope& e, const KeySet& keys) {
  CheckedEnvelope out;
  if (e.payload_type != kInTotoPayloadType) {
    out.problem = "payload type " + e.payload_type.substr(0, 80) + " is not " + kInTotoPayloadType;
    return out;
  }
  const std::string pae = Pae(e.payload_type, e.payload);
  std::string refused;
  for (const DsseSignature& s : e.signatures) {
    std::vector<const PublicKey*> candidates;
    if (s.keyid.empty()) {
      for (const auto& k : keys.keys) candidates.push_back(&k);
    } else if (const PublicKey* k = keys.Find(s.keyid)) {
      candidates.push_back(k);
    }
    if (candidates.empty()) {
      refused = "signed by key " + Short(s.keyid) + ", which is not in the farm's key set";
      continue;
    }
    for (const PublicKey* k : candidates) {
      if (!VerifyEd25519(k->public_raw, pae, s.sig)) {
        if (!s.keyid.empty())
          refused = "the signature by key " + Short(k->keyid) + " does not verify";
        continue;
      }
      if (k->state == KeyState::kRevoked) {
        refused = RevokedProblem(*k);
        continue;
      }
      out.keyid = k->keyid;
      break;
    }
    if (!out.keyid.empty()) break;
  }
  if (out.keyid.empty()) {
    out.problem = refused.empty() ? "no signature verifies under the farm's keys" : refused;
    return out;
  }
  auto statement = ParseStatement(e.payload);
  if (!statement.ok()) {
    out.problem = "signed, but " + statement.status().message();
    return out;
  }
  out.statement = std::move(statement).value();
  out.ok = true;
  return out;
}

std::string NormalizeComputeCapability(std::string_view arch) {
  std::string_view s = arch;
  if (s.starts_with("sm_"))
    s.remove_prefix(3);
  else if (s.starts_with("sm"))
    s.remove_prefix(2);
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) s.remove_suffix(1);
  size_t dot = s.find('.');
  std::string major, minor;
  if (dot != s.npos) {
    major = s.substr(0, dot);
    minor = s.substr(dot + 1);
  } else if (s.size() >= 2) {
    major = s.substr(0, s.size() - 1);
    minor = s.substr(s.size() - 1);
  }
  auto digits = [](const std::string& d) {
    if (d.empty() || d.size() > 3) return false;
    for (char c : d) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (!digits(major) || !digits(minor) || minor.size() != 1) return "";
  return std::to_string(std::stoi(major)) + "." + minor;
}

namespace {

// Whether the statement is about `wheel`; otherwise says why not in *problem.
bool AboutWheel(const Statement& st, const Subject& wheel, std::string* problem) {
  for (const Subject& s : st.subjects) {
    if (s.sha256 != wheel.sha256) continue;
    if (s.name == wheel.name) return true;
    *problem = "the statement attests these bytes as " + s.name + ", not " + wheel.name;
    return false;
  }
  const Subject& first = st.subjects.front();
  *problem = "the statement is about " + first.name + " with sha256 " + first.sha256 +
             ", but this wheel's sha256 is " + wheel.sha256 +
             (first.name == wheel.name ? ": the wheel was changed or replaced" : "");
  return false;
}

void CheckRequiredArch(const VerifyOptions& options, WheelVerification* v) {
  if (options.require_validated_arch.empty()) return;
  std::string want = NormalizeComputeCapability(options.require_validated_arch);
  if (want.empty()) {
    v->problems.push_back("--require-validated-arch " + options.require_validated_arch +
                          " is not a compute capability (12.0, sm_120)");
    return;
  }
  std::string seen;
  for (const auto& sv : v->validations) {
    const ValidationSummary& s = sv.summary;
    if (s.verdict == "passed" && NormalizeComputeCapability(s.compute_capability) == want) return;
    seen += (seen.empty() ? "" : ", ") + s.verdict + " on " + s.gpu_name + " (" +
            s.compute_capability + ")";
  }
  v->problems.push_back("no signed passed validation on a GPU of compute capability " + want +
                        (seen.empty() ? " (no validation statement at all)" : "; seen: " + seen));
}

// The owner the build statement names, against --owner and the farm's record.
void CheckOwner(const VerifyOptions& options, WheelVerification* v) {
  if (!v->build) return;
  const BuildSummary& b = *v->build;
  const std::string named = b.project_owner.empty() ? "no owner" : "owner " + b.project_owner;
  if (!options.require_owner.empty() && b.project_owner != options.require_owner) {
    v->problems.push_back("the build statement names " + named + " of project " +
                          (b.project.empty() ? "?" : b.project) + ", not " + options.require_owner +
                          " (--owner)");
  }
  if (options.recorded_owner.empty()) return;
  if (b.project_owner.empty()) {  // signed before projects had owners: nothing to compare
    v->notes.push_back("the build statement predates project owners; the farm records " +
                       options.recorded_owner + " as the owner now");
  } else if (b.project_owner != options.recorded_owner) {
    v->problems.push_back("the farm records " + options.recorded_owner + " as the owner of " +
                          "project " + b.project + ", but the build statement names " + named);
  }
}

}  // namespace

WheelVerification VerifyWheel(const Subject& wheel, const std::vector<Envelope>& envelopes,
                              const KeySet& keys, const VerifyOptions& options) {
  WheelVerification v;
  if (std::string expired = KeySetExpired(keys, options.now_ms);
      options.now_ms > 0 && !expired.empty()) {
    v.problems.push_back(expired);
  }
  for (size_t i = 0; i < envelopes.size(); ++i) {
    std::string where = "statement " + std::to_string(i + 1) + ": ";
    CheckedEnvelope c = CheckEnvelope(envelopes[i], keys);
    if (!c.ok) {
      v.problems.push_back(where + c.problem);
      continue;
    }
    std::string problem;
    if (!AboutWheel(c.statement, wheel, &problem)) {
      v.problems.push_back(where + problem);
      continue;
    }
    if (c.statement.predicate_type == kSlsaPredicateType) {
      if (!v.build) {
        v.build = c.statement.build;
        v.build_keyid = c.keyid;
      }
    } else if (c.statement.predicate_type == kValidationPredicateType) {
      if (!c.statement.validation.validated_sha256.empty() &&
          c.statement.validation.validated_sha256 != wheel.sha256) {
        v.notes.push_back(where + "validated as sha256 " + c.statement.validation.validated_sha256 +
                          " before relabelling");
      }
      v.validations.push_back({c.statement.validation, c.keyid});
    } else {
      v.notes.push_back(where + "predicate " + c.statement.predicate_type.substr(0, 80) +
                        " is not one this verifier reads; ignored");
    }
  }
  if (!v.build && v.problems.empty()) {
    v.problems.push_back(envelopes.empty() ? "no provenance statement at all"
                                           : "no signed build provenance for this wheel");
  }
  CheckRequiredArch(options, &v);
  CheckOwner(options, &v);
  v.ok = v.problems.empty();
  return v;
}

}  // namespace farm::provenance
