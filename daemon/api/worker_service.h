// WorkerService: registration, heartbeats, job leases, log and artifact uploads, results.
// A worker authenticates with its own token and may only report on attempts it holds;
// repeated or out-of-order messages are idempotent. Nothing throws out of a handler.
#ifndef FARM_DAEMON_API_WORKER_SERVICE_H_
#define FARM_DAEMON_API_WORKER_SERVICE_H_

#include "daemon/api/peers.h"
#include "daemon/api/service_context.h"
#include "farm/v1/worker.grpc.pb.h"

namespace farm::api {

class WorkerService final : public farm::v1::WorkerService::Service {
 public:
  explicit WorkerService(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::Status Register(grpc::ServerContext*, const farm::v1::RegisterRequest*,
                        farm::v1::RegisterResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const farm::v1::HeartbeatRequest*,
                         farm::v1::HeartbeatResponse*) override;
  grpc::Status AcquireJob(grpc::ServerContext*, const farm::v1::AcquireJobRequest*,
                          farm::v1::AcquireJobResponse*) override;
  grpc::Status UploadLog(grpc::ServerContext*, grpc::ServerReader<farm::v1::LogChunk>*,
                         farm::v1::UploadLogResponse*) override;
  grpc::Status UploadArtifact(grpc::ServerContext*, grpc::ServerReader<farm::v1::ArtifactUpload>*,
                              farm::v1::UploadArtifactResponse*) override;
  grpc::Status CompleteJob(grpc::ServerContext*, const farm::v1::CompleteJobRequest*,
                           farm::v1::CompleteJobResponse*) override;
  grpc::Status DownloadArtifact(grpc::ServerContext*, const farm::v1::WorkerArtifactRequest*,
                                grpc::ServerWriter<farm::v1::ArtifactData>*) override;

 private:
  ServiceContext* ctx_;
  PeerCache peers_;
};

}  // namespace farm::api

#endif  // FARM_DAEMON_API_WORKER_SERVICE_H_
