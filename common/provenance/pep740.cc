#include "common/provenance/pep740.h"

#include <boost/json.hpp>

#include "common/provenance/base64.h"
#include "common/provenance/json_read.h"

namespace farm::provenance {

namespace json = boost::json;

std::string Pep740Provenance(const std::vector<Envelope>& envelopes, const std::string& farm_id,
                             const std::string& keys_url) {
  json::array attestations;
  for (const Envelope& e : envelopes) {
    for (const DsseSignature& s : e.signatures) {
      attestations.push_back(json::object{
          {"version", 1},
          {"verification_material", json::object{{"keyid", s.keyid}, {"keys", keys_url}}},
          {"envelope", json::object{{"statement", Base64Encode(e.payload)},
                                    {"signature", Base64Encode(s.sig)}}}});
    }
  }
  json::object publisher{{"kind", "gpu-wheel-farm"},
                         {"claims", json::object{{"farm", farm_id}, {"keys", keys_url}}}};
  return json::serialize(
      json::object{{"version", 1},
                   {"attestation_bundles",
                    json::array{json::object{{"publisher", std::move(publisher)},
                                             {"attestations", std::move(attestations)}}}}});
}

namespace {

Result<Envelope> ParseAttestation(const json::value& v) {
  const json::object* a = v.if_object();
  if (a == nullptr) return Status::InvalidArgument("attestation: not an object");
  const json::object* env = ObjectAt(*a, {"envelope"});
  if (env == nullptr) return Status::InvalidArgument("attestation: no envelope");
  FARM_ASSIGN_OR_RETURN(std::string statement, RequiredString(*env, "statement", "attestation"));
  FARM_ASSIGN_OR_RETURN(std::string signature, RequiredString(*env, "signature", "attestation"));
  auto payload = Base64Decode(statement);
  auto sig = Base64Decode(signature);
  if (!payload.ok() || !sig.ok()) return Status::InvalidArgument("attestation: bad Base64");
  return Envelope{.payload_type = kInTotoPayloadType,
                  .payload = std::move(payload).value(),
                  .signatures = {{.keyid = StringAt(*a, {"verification_material", "keyid"}),
                                  .sig = std::move(sig).value()}}};
}

}  // namespace

Result<std::vector<Envelope>> ParsePep740Provenance(std::string_view text) {
  if (text.size() > kMaxEnvelopeBytes) return Status::InvalidArgument("provenance: too large");
  FARM_ASSIGN_OR_RETURN(json::value doc, ParseJson(text, "provenance"));
  const json::object* o = doc.if_object();
  if (o == nullptr) return Status::InvalidArgument("provenance: not a JSON object");
  const json::array* bundles = ArrayAt(*o, "attestation_bundles");
  if (bundles == nullptr) return Status::InvalidArgument("provenance: no attestation_bundles");
  std::vector<Envelope> out;
  for (const json::value& b : *bundles) {
    const json::array* list = b.is_object() ? ArrayAt(b.as_object(), "attestations") : nullptr;
    if (list == nullptr) return Status::InvalidArgument("provenance: a bundle has no attestations");
    for (const json::value& a : *list) {
      if (out.size() == kMaxEnvelopesPerFile) {
        return Status::InvalidArgument("provenance: too many attestations");
      }
      FARM_ASSIGN_OR_RETURN(Envelope e, ParseAttestation(a));
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace farm::provenance
