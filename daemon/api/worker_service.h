// WorkerService: registration, heartbeats, job leases, log and artifact uploads, results.
// A worker authenticates with its own token and may only report on attempts it holds;
// repeated or out-of-order messages are idempotent. Nothing throws out of a handler.
#ifndef FARM_DAEMON_API_WORKER_SERVICE_H_
#define FARM_DAEMON_API_WORKER_SERVICE_H_

#include <cstdint>
#include <map>
#include <mutex>

#include "daemon/api/peers.h"
#include "daemon/api/service_context.h"
#include "farm/v1/worker.grpc.pb.h"

namespace farm::api {

// At most one progress write per running job every kEveryMs: every heartbeat already costs
// writes, and a build's progress and memory change on nearly every one. Thread-safe.
class ProgressThrottle {
 public:
  static constexpr int64_t kEveryMs = 4000;
  // True when the job's progress may be written at `now_ms` (and records it).
  bool Allow(int64_t job_id, int64_t now_ms);
  // The job ended: its next attempt's first report is written at once.
  void Forget(int64_t job_id);

 private:
  static constexpr size_t kMaxJobs = 100'000;  // a bound; jobs that vanish are forgotten
  std::mutex mu_;
  std::map<int64_t, int64_t> last_ms_;  // guarded by mu_
};
// A worker may report on (or fetch the source of) an attempt only if it was leased that
// attempt: PermissionDenied otherwise.
Status CheckHolds(const ServiceContext& ctx, const Principal& who, int64_t job_id, int attempt);

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
  // sources.cc
  grpc::Status DownloadSource(grpc::ServerContext*, const farm::v1::DownloadSourceRequest*,
                              grpc::ServerWriter<farm::v1::SourceChunk>*) override;
  grpc::Status DownloadArtifact(grpc::ServerContext*, const farm::v1::WorkerArtifactRequest*,
                                grpc::ServerWriter<farm::v1::ArtifactData>*) override;

 private:
  ServiceContext* ctx_;
  PeerCache peers_;
  ProgressThrottle progress_;
};

}  // namespace farm::api

#endif  // FARM_DAEMON_API_WORKER_SERVICE_H_
