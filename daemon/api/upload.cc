// UploadArtifact: a wheel streamed by the worker, checked against its announced size and
// sha256 before it enters the content-addressed store.
#include "common/log.h"
#include "daemon/model/convert.h"
#include "daemon/api/worker_service.h"

namespace farm::api {

using model::ArtifactToProto;
namespace {

bool SafeFilename(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  return name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

Status CheckHeader(const ServiceContext& ctx, const std::string& worker_id,
                   const farm::v1::ArtifactHeader& h) {
  if (!SafeFilename(h.filename())) return Status::InvalidArgument("bad artifact file name");
  if (h.size() < 0 || h.size() > ctx.tunables.max_artifact_bytes) {
    return Status::InvalidArgument("artifact size " + std::to_string(h.size()) + " out of range");
  }
  FARM_ASSIGN_OR_RETURN(auto job, ctx.store->GetJob(h.job_id()));
  if (job.attempt != h.attempt() || job.worker_id != worker_id || job.state != store::kJobRunning) {
    return Status::FailedPrecondition("attempt " + std::to_string(h.attempt()) + " of job " +
                                      std::to_string(h.job_id()) + " is not running on this worker");
  }
  return Status::Ok();
}

Result<farm::v1::Artifact> Receive(const ServiceContext& ctx, const Principal& who,
                                   grpc::ServerReader<farm::v1::ArtifactUpload>* in) {
  farm::v1::ArtifactUpload msg;
  if (!in->Read(&msg) || !msg.has_header()) {
    return Status::InvalidArgument("an artifact upload starts with its header");
  }
  const farm::v1::ArtifactHeader header = msg.header();
  FARM_RETURN_IF_ERROR(CheckHeader(ctx, who.worker_id, header));
  FARM_ASSIGN_OR_RETURN(auto writer, ctx.blobs->BeginWrite(header.size(), header.sha256()));
  while (in->Read(&msg)) {
    if (!msg.has_data() && msg.part_case() != farm::v1::ArtifactUpload::kData) {
      return Status::InvalidArgument("only data may follow the header");
    }
    FARM_RETURN_IF_ERROR(writer->Append(msg.data()));
  }
  FARM_RETURN_IF_ERROR(writer->Commit().WithContext(header.filename()));
  store::ArtifactRow row{.job_id = header.job_id(), .attempt = header.attempt(),
                         .filename = header.filename(), .sha256 = header.sha256(),
                         .size = header.size(), .manifest = header.manifest().SerializeAsString(),
                         .created_ms = ctx.clock->NowUnixMs()};
  FARM_ASSIGN_OR_RETURN(auto stored, ctx.store->InsertArtifact(row));
  log::Info("artifact " + header.filename() + " (" + std::to_string(header.size()) +
            " bytes, sha256 " + header.sha256() + ") stored for job " + std::to_string(header.job_id()));
  return ArtifactToProto(stored);
}

}  // namespace

grpc::Status WorkerService::UploadArtifact(grpc::ServerContext* call,
                                           grpc::ServerReader<farm::v1::ArtifactUpload>* in,
                                           farm::v1::UploadArtifactResponse* resp) {
  try {
    auto who = AuthorizeCall(*ctx_->auth, *call, Need::kWorker);
    if (!who.ok()) return ToGrpc(who.status());
    auto artifact = Receive(*ctx_, who.value(), in);
    if (!artifact.ok()) return ToGrpc(artifact.status());
    *resp->mutable_artifact() = artifact.value();
    return grpc::Status::OK;
  } catch (const std::exception& e) {
    log::Error(std::string("artifact upload failed: ") + e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, "internal error");
  }
}

}  // namespace farm::api
