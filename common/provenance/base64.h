// Base64 (RFC 4648) for DSSE envelopes, PEP 740 attestations and key sets. Encoding is
// always the standard alphabet with padding; decoding accepts what DSSE allows readers to
// accept (the standard or the URL-safe alphabet, padded or not) and nothing else.
#ifndef FARM_COMMON_PROVENANCE_BASE64_H_
#define FARM_COMMON_PROVENANCE_BASE64_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::provenance {

// Standard alphabet, '=' padded.
std::string Base64Encode(std::string_view bytes);

// Decodes standard or URL-safe Base64, with or without '=' padding. InvalidArgument for a
// character outside both alphabets, mixed alphabets, a misplaced '=', a length no
// encoding produces, or non-zero bits after the last byte (so each text has one meaning).
Result<std::string> Base64Decode(std::string_view text);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_BASE64_H_
