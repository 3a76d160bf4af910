// The index's form of a wheel's provenance: a PEP 740 provenance object, served at the
// URL the PEP 691 JSON names in the file's "provenance" key. Each attestation carries a
// statement and the signature over PAE(in-toto payload type, statement), as PEP 740
// defines; the verification material is the farm's key (its id and the key set's URL)
// in place of a Sigstore certificate and transparency log entry.
#ifndef FARM_COMMON_PROVENANCE_PEP740_H_
#define FARM_COMMON_PROVENANCE_PEP740_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/provenance/dsse.h"
#include "common/status.h"

namespace farm::provenance {

// The media type PEP 740 gives provenance files.
inline constexpr char kPep740MediaType[] = "application/vnd.pypi.integrity.v1+json";

// {"version": 1, "attestation_bundles": [{"publisher": {"kind": "gpu-wheel-farm",
//  "claims": {"farm": ..., "keys": keys_url}}, "attestations": [...]}]}; one attestation
// per signature of each envelope.
std::string Pep740Provenance(const std::vector<Envelope>& envelopes, const std::string& farm_id,
                             const std::string& keys_url);

// The envelopes of a provenance object (each attestation becomes a one-signature
// envelope). InvalidArgument for anything malformed, past kMaxEnvelopeBytes in all or
// past kMaxEnvelopesPerFile attestations.
Result<std::vector<Envelope>> ParsePep740Provenance(std::string_view json);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_PEP740_H_
