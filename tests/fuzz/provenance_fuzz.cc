// Fuzzes the provenance parsers (DSSE envelope lines, PEP 740 provenance objects, key
// sets, in-toto statements) and verification against a fixed key set. The first byte picks
// the parser. Properties: nothing crashes, hangs or leaks; an accepted envelope survives
// its own JSON unchanged; an accepted key set survives its own JSON; an accepted statement
// names only subjects with a sha256; a wheel is verified only with a build statement and
// no problem.
#include <cstddef>
#include <cstdint>

#include "common/provenance/base64.h"
#include "common/provenance/pep740.h"
#include "common/provenance/verify.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

using namespace farm::provenance;

// RFC 8032 TEST 1's public key: make_seeds.py signs the seeds with its secret half.
const KeySet& Keys() {
  static const KeySet* keys = [] {
    auto* set = new KeySet;
    std::string raw = Base64Decode("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=").value();
    set->farm_id = "fuzz";
    set->keys.push_back({.keyid = KeyIdOf(raw), .public_raw = raw});
    return set;
  }();
  return *keys;
}

void CheckVerdicts(const std::vector<Envelope>& envelopes) {
  // The seeds attest a wheel with this name and the sha256 of "wheel".
  Subject wheel{.name = "fuzz_pkg-1.0-cp311-cp311-linux_x86_64.whl",
                .sha256 = "ba59926159d2aa256eb8739b8da7e2b574b960e1202c6d624cbe981cef996c91"};
  for (const auto& e : envelopes) {
    CheckedEnvelope c = CheckEnvelope(e, Keys());
    Require(c.ok == c.problem.empty(), "an envelope is accepted or refused with a reason");
    if (c.ok) Require(!c.statement.subjects.empty(), "a verified statement has a subject");
  }
  WheelVerification v = VerifyWheel(wheel, envelopes, Keys(), {.require_validated_arch = "9.0"});
  Require(v.ok == v.problems.empty(), "a verdict is ok exactly when nothing is wrong");
  if (v.ok) Require(v.build.has_value(), "a verified wheel has build provenance");
}

void Envelopes(std::string_view text) {
  auto envelopes = ParseEnvelopeLines(text);
  if (!envelopes.ok()) {
    Require(!envelopes.status().message().empty(), "a refused file says why");
    return;
  }
  for (const auto& e : *envelopes) {
    auto again = ParseEnvelope(EnvelopeJson(e));
    Require(again.ok(), "an accepted envelope parses from its own JSON");
    Require(again->payload == e.payload && again->payload_type == e.payload_type &&
                again->signatures.size() == e.signatures.size(),
            "an envelope survives its own JSON");
  }
  CheckVerdicts(*envelopes);
}

void KeySets(std::string_view text) {
  auto set = ParseKeySet(text);
  if (!set.ok()) return;
  auto json = KeySetJson(*set);
  Require(json.ok(), "an accepted key set serializes");
  auto again = ParseKeySet(*json);
  Require(again.ok() && again->keys.size() == set->keys.size(), "a key set survives its own JSON");
  for (size_t i = 0; i < set->keys.size(); ++i) {
    Require(
        again->keys[i].keyid == set->keys[i].keyid && again->keys[i].state == set->keys[i].state,
        "each key keeps its id and state");
  }
}

int FuzzOne(const uint8_t* data, size_t size) {
  Input in(data, size);
  switch (in.Byte() % 4) {
    case 0:
      Envelopes(in.Rest());
      break;
    case 1:
      if (auto e = ParsePep740Provenance(in.Rest()); e.ok()) CheckVerdicts(*e);
      break;
    case 2:
      KeySets(in.Rest());
      break;
    default:
      if (auto st = ParseStatement(in.Rest()); st.ok()) {
        for (const auto& s : st->subjects)
          Require(s.sha256.size() == 64, "subjects carry a sha256");
      }
      break;
  }
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
