// DownloadSource: a worker fetches the source archive of an attempt it holds, from an
// offset (a resumed download), in chunks.
#include "daemon/api/handler.h"
#include "daemon/api/worker/worker_service.h"

namespace farm::api {
namespace {

constexpr size_t kSourceChunkBytes = 1 << 20;

}  // namespace

grpc::Status WorkerService::DownloadSource(grpc::ServerContext* call,
                                           const farm::v1::DownloadSourceRequest* req,
                                           grpc::ServerWriter<farm::v1::SourceChunk>* out) {
  return Handle(ctx_, call, Need::kWorker, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(CheckHolds(*ctx_, who, req->job_id(), req->attempt()));
    FARM_ASSIGN_OR_RETURN(auto job, ctx_->store->GetJob(req->job_id()));
    FARM_ASSIGN_OR_RETURN(auto build, ctx_->store->GetBuild(job.build_id));
    if (build.source_sha256.empty() || build.source_sha256 != req->sha256()) {
      return Status::PermissionDenied("job " + std::to_string(req->job_id()) +
                                      " builds no source archive " + req->sha256());
    }
    auto reader = ctx_->blobs->OpenRead(req->sha256(), req->offset());
    if (!reader.ok() && reader.status().code() == StatusCode::kNotFound) {
      return Status::DataLoss("source archive " + req->sha256() + " is missing");
    }
    FARM_RETURN_IF_ERROR(reader.status());
    farm::v1::SourceChunk chunk;
    chunk.set_size((*reader)->size());
    bool ok = out->Write(chunk);
    std::string buf;
    while (ok) {
      FARM_RETURN_IF_ERROR((*reader)->Read(kSourceChunkBytes, &buf));
      if (buf.empty()) break;
      chunk.Clear();
      chunk.set_data(std::move(buf));
      ok = out->Write(chunk);
    }
    return ok ? Status::Ok() : Status::Cancelled("the worker went away");
  });
}

}  // namespace farm::api
