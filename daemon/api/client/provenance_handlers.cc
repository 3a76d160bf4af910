// GetProvenanceKeys, RotateProvenanceKey and RevokeProvenanceKey: the farm's signing keys
// (docs/provenance.md). Reading the public set needs a viewer; changing it needs an admin.
// Revoking signs again, with the active key, every statement the revoked key signed.
#include "common/log.h"
#include "common/provenance/dsse.h"
#include "common/version.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/attest/attestor.h"

namespace farm::api {
namespace {

Status NeedAttestor(const ServiceContext& ctx) {
  if (ctx.attestor == nullptr) return Status::Unimplemented("this farmd signs no provenance");
  return Status::Ok();
}

Status FillKeys(const ServiceContext& ctx, farm::v1::ProvenanceKeys* resp) {
  FARM_RETURN_IF_ERROR(NeedAttestor(ctx));
  FARM_ASSIGN_OR_RETURN(std::string json, ctx.attestor->KeysJson());
  resp->set_key_set_json(json);
  return Status::Ok();
}

}  // namespace

grpc::Status ClientService::GetProvenanceKeys(grpc::ServerContext* call,
                                              const farm::v1::GetProvenanceKeysRequest*,
                                              farm::v1::ProvenanceKeys* resp) {
  return Handle(ctx_, call, Need::kViewer,
                [&](const Principal&) -> Status { return FillKeys(*ctx_, resp); });
}

grpc::Status ClientService::RotateProvenanceKey(grpc::ServerContext* call,
                                                const farm::v1::RotateProvenanceKeyRequest*,
                                                farm::v1::ProvenanceKeys* resp) {
  audit::Entry entry{audit::Action::kKeyRotate, "provenance keys"};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedAttestor(*ctx_));
    FARM_ASSIGN_OR_RETURN(auto made, ctx_->attestor->RotateKey());
    entry.done = "new signing key " + made.keyid;
    log::Info("provenance key rotated by " + who.name + ": " + made.keyid);
    resp->set_changed_keyid(made.keyid);
    return FillKeys(*ctx_, resp);
  });
}

grpc::Status ClientService::RevokeProvenanceKey(grpc::ServerContext* call,
                                                const farm::v1::RevokeProvenanceKeyRequest* req,
                                                farm::v1::ProvenanceKeys* resp) {
  audit::Entry entry{audit::Action::kKeyRevoke, "provenance key " + req->keyid()};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedAttestor(*ctx_));
    if (req->reason().empty()) return Status::InvalidArgument("a revocation needs a reason");
    FARM_ASSIGN_OR_RETURN(auto revoked, ctx_->attestor->RevokeKey(req->keyid(), req->reason()));
    entry.done = "revoked " + revoked.keyid + ": " + req->reason();
    log::Warn("provenance key " + revoked.keyid + " revoked by " + who.name + ": " + req->reason());
    resp->set_changed_keyid(revoked.keyid);
    return FillKeys(*ctx_, resp);
  });
}

grpc::Status ClientService::GetArtifactProvenance(grpc::ServerContext* call,
                                                  const farm::v1::GetArtifactRequest* req,
                                                  farm::v1::ArtifactProvenance* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_RETURN_IF_ERROR(NeedAttestor(*ctx_));
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetArtifact(req->artifact_id()));
    FARM_ASSIGN_OR_RETURN(auto envelopes, ctx_->attestor->Envelopes(row.sha256));
    if (!envelopes.empty()) resp->set_intoto_jsonl(provenance::EnvelopeLines(envelopes));
    return Status::Ok();
  });
}

grpc::Status ClientService::GetServerInfo(grpc::ServerContext* call,
                                          const farm::v1::GetServerInfoRequest*,
                                          farm::v1::ServerInfo* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    resp->set_http_url(ctx_->http_url);
    resp->set_version(FarmVersion());
    return Status::Ok();
  });
}

}  // namespace farm::api
