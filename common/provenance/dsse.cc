#include "common/provenance/dsse.h"

#include <boost/json.hpp>

#include "common/provenance/base64.h"
#include "common/provenance/json_read.h"

namespace farm::provenance {

namespace json = boost::json;

std::string Pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

Result<Envelope> SignEnvelope(const Ed25519Key& key, std::string_view payload_type,
                              std::string_view payload) {
  FARM_ASSIGN_OR_RETURN(std::string sig, key.Sign(Pae(payload_type, payload)));
  return Envelope{.payload_type = std::string(payload_type),
                  .payload = std::string(payload),
                  .signatures = {{.keyid = key.key_id(), .sig = std::move(sig)}}};
}

std::string EnvelopeJson(const Envelope& e) {
  json::array sigs;
  for (const auto& s : e.signatures) {
    sigs.push_back(json::object{{"keyid", s.keyid}, {"sig", Base64Encode(s.sig)}});
  }
  return json::serialize(json::object{{"payload", Base64Encode(e.payload)},
                                      {"payloadType", e.payload_type},
                                      {"signatures", std::move(sigs)}});
}

Result<Envelope> ParseEnvelope(std::string_view text) {
  if (text.size() > kMaxEnvelopeBytes) {
    return Status::InvalidArgument("envelope of " + std::to_string(text.size()) +
                                   " bytes, more than the " + std::to_string(kMaxEnvelopeBytes) +
                                   " accepted");
  }
  FARM_ASSIGN_OR_RETURN(json::value doc, ParseJson(text, "envelope"));
  const json::object* o = doc.if_object();
  if (o == nullptr) return Status::InvalidArgument("envelope: not a JSON object");
  Envelope e;
  FARM_ASSIGN_OR_RETURN(e.payload_type, RequiredString(*o, "payloadType", "envelope"));
  FARM_ASSIGN_OR_RETURN(std::string payload, RequiredString(*o, "payload", "envelope"));
  auto decoded = Base64Decode(payload);
  if (!decoded.ok())
    return Status::InvalidArgument("envelope payload: " + decoded.status().message());
  e.payload = std::move(decoded).value();
  const json::value* sigs = o->if_contains("signatures");
  if (sigs == nullptr || !sigs->is_array()) {
    return Status::InvalidArgument("envelope: \"signatures\" is not an array");
  }
  if (sigs->as_array().empty()) return Status::InvalidArgument("envelope: no signature");
  if (sigs->as_array().size() > kMaxSignatures) {
    return Status::InvalidArgument("envelope: more than " + std::to_string(kMaxSignatures) +
                                   " signatures");
  }
  for (const json::value& v : sigs->as_array()) {
    const json::object* so = v.if_object();
    if (so == nullptr) return Status::InvalidArgument("envelope: a signature is not an object");
    DsseSignature s;
    FARM_ASSIGN_OR_RETURN(std::string sig, RequiredString(*so, "sig", "signature"));
    auto raw = Base64Decode(sig);
    if (!raw.ok()) return Status::InvalidArgument("signature: " + raw.status().message());
    s.sig = std::move(raw).value();
    s.keyid = OptionalString(*so, "keyid");
    e.signatures.push_back(std::move(s));
  }
  return e;
}

Result<std::vector<Envelope>> ParseEnvelopeLines(std::string_view text) {
  std::vector<Envelope> out;
  size_t pos = 0;
  for (int line = 1; pos < text.size(); ++line) {
    size_t end = text.find('\n', pos);
    std::string_view one = text.substr(pos, end == text.npos ? text.npos : end - pos);
    pos = end == text.npos ? text.size() : end + 1;
    if (one.find_first_not_of(" \t\r") == one.npos) continue;
    if (out.size() == kMaxEnvelopesPerFile) {
      return Status::InvalidArgument("more than " + std::to_string(kMaxEnvelopesPerFile) +
                                     " envelopes");
    }
    auto e = ParseEnvelope(one);
    if (!e.ok()) return e.status().WithContext("line " + std::to_string(line));
    out.push_back(std::move(e).value());
  }
  return out;
}

std::string EnvelopeLines(const std::vector<Envelope>& envelopes) {
  std::string out;
  for (const auto& e : envelopes) out += EnvelopeJson(e) + "\n";
  return out;
}

}  // namespace farm::provenance
