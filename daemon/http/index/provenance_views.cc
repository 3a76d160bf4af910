#include "daemon/http/index/provenance_views.h"

#include <boost/json.hpp>

#include "common/clock.h"
#include "common/provenance/base64.h"
#include "common/provenance/pep740.h"
#include "common/wheel/wheel_name.h"
#include "daemon/attest/attestor.h"

namespace farm::http {

Response ProvenanceKeysResponse(const DashboardDeps& deps) {
  if (deps.attestor == nullptr) return ErrorResponse(Status::NotFound("no provenance is kept"));
  auto keys = deps.attestor->KeysJson();
  if (!keys.ok()) return ErrorResponse(keys.status());
  Response r = TextResponse(200, std::move(keys).value());
  r.content_type = "application/json";
  return r;
}

std::string InstallScriptKeys(const DashboardDeps& deps) {
  if (deps.attestor == nullptr) return "";
  auto keys = deps.attestor->KeysJson();
  return keys.ok() ? provenance::Base64Encode(*keys) : "";
}

Response ProjectOwnerResponse(const DashboardDeps& deps, std::string_view name) {
  const std::string project = wheel::NormalizeProjectName(name);
  auto row = deps.store->GetProjectName(project);
  if (!row.ok()) return ErrorResponse(row.status());
  if (!row->has_value()) {
    return ErrorResponse(Status::NotFound("nobody owns project \"" + project + "\""));
  }
  const store::ProjectNameRow& r = **row;
  return JsonResponse(
      200, boost::json::serialize(boost::json::object{{"name", r.name},
                                                      {"owner", r.owner},
                                                      {"claimed", FormatRfc3339(r.claimed_ms)},
                                                      {"updated", FormatRfc3339(r.updated_ms)}}) +
               "\n");
}

Response ProvenanceFileResponse(const DashboardDeps& deps, const IndexFile& file, bool pep740) {
  if (deps.attestor == nullptr) return ErrorResponse(Status::NotFound("no provenance is kept"));
  auto envelopes = deps.attestor->Envelopes(file.sha256);
  if (!envelopes.ok()) return ErrorResponse(envelopes.status());
  if (envelopes->empty()) {
    return ErrorResponse(Status::NotFound(file.filename + " has no signed provenance"));
  }
  Response r;
  if (pep740) {
    r = TextResponse(200,
                     provenance::Pep740Provenance(*envelopes, deps.attestor->farm_id(), kKeysPath));
    r.content_type = provenance::kPep740MediaType;
  } else {
    r = TextResponse(200, provenance::EnvelopeLines(*envelopes));
    r.content_type = "application/jsonl";
  }
  return r;
}

}  // namespace farm::http
