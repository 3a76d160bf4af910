// DSSE (Dead Simple Signing Envelope, secure-systems-lab/dsse v1.0): the signature covers
// PAE(payloadType, payload), never the JSON around it, so a reader checks exactly the
// bytes it then parses. Envelopes travel as JSON, one per line in a `.intoto.jsonl` file.
//
//   Envelope e = SignEnvelope(key, kInTotoPayloadType, statement_json).value();
//   std::string line = EnvelopeJson(e);
//   Envelope back = ParseEnvelope(line).value();   // signatures are checked by verify.h
#ifndef FARM_COMMON_PROVENANCE_DSSE_H_
#define FARM_COMMON_PROVENANCE_DSSE_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/provenance/ed25519.h"
#include "common/status.h"

namespace farm::provenance {

// The payload type of an in-toto statement.
inline constexpr char kInTotoPayloadType[] = "application/vnd.in-toto+json";

// Limits on what the parsers accept from outside: one envelope, the signatures on it,
// and the envelopes of one .intoto.jsonl file.
inline constexpr size_t kMaxEnvelopeBytes = 4 << 20;
inline constexpr size_t kMaxSignatures = 16;
inline constexpr size_t kMaxEnvelopesPerFile = 64;

// The pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, the
// lengths in ASCII decimal without leading zeros.
std::string Pae(std::string_view payload_type, std::string_view payload);

struct DsseSignature {
  std::string keyid;
  std::string sig;  // raw bytes (Base64 in JSON)
};

struct Envelope {
  std::string payload_type;
  std::string payload;  // raw bytes (Base64 in JSON)
  std::vector<DsseSignature> signatures;
};

// Signs PAE(payload_type, payload) with `key`; one signature, named by the key's id.
Result<Envelope> SignEnvelope(const Ed25519Key& key, std::string_view payload_type,
                              std::string_view payload);

// The envelope as one line of JSON (no newline): payload, payloadType, signatures.
std::string EnvelopeJson(const Envelope& envelope);

// Parses one envelope. InvalidArgument, saying what is wrong, for text past
// kMaxEnvelopeBytes, malformed JSON, a missing or mistyped member, Base64 that does not
// decode, no signature, or more than kMaxSignatures. Unknown members are ignored.
Result<Envelope> ParseEnvelope(std::string_view json);

// A .intoto.jsonl file: envelopes one per line, blank lines skipped. Errors name the line.
Result<std::vector<Envelope>> ParseEnvelopeLines(std::string_view text);
std::string EnvelopeLines(const std::vector<Envelope>& envelopes);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_DSSE_H_
