// FarmClient: the worker's calls to farmd's WorkerService. GrpcFarmClient is the real one
// (bearer token metadata, deadlines, gRPC codes mapped to Status codes with the same
// numbers); tests substitute fakes. Thread-safe: job threads, the heartbeat thread and
// the acquire loop call it at once.
#ifndef FARM_WORKER_CLIENT_FARM_CLIENT_H_
#define FARM_WORKER_CLIENT_FARM_CLIENT_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/net/tls.h"
#include "common/sha256.h"
#include "common/status.h"
#include "farm/v1/worker.grpc.pb.h"

namespace farm::agent {

class FarmClient {
 public:
  virtual ~FarmClient() = default;
  // Register with `bearer` (the enrollment token, or the worker's own token to keep its
  // identity). Later calls carry the token given to SetToken().
  virtual Result<farm::v1::RegisterResponse> Register(const farm::v1::RegisterRequest& req,
                                                      const std::string& bearer) = 0;
  virtual void SetToken(const std::string& worker_token) = 0;
  virtual Result<farm::v1::HeartbeatResponse> Heartbeat(const farm::v1::HeartbeatRequest& req) = 0;
  virtual Result<farm::v1::AcquireJobResponse> AcquireJob(
      const farm::v1::AcquireJobRequest& req) = 0;
  // One UploadLog stream carrying `lines` as one chunk; returns acked_seq.
  virtual Result<int64_t> UploadLog(int64_t job_id, int32_t attempt,
                                    const std::vector<farm::v1::LogLine>& lines) = 0;
  // Streams the header then the file at `path` in 1 MiB chunks.
  virtual Result<farm::v1::Artifact> UploadArtifact(const farm::v1::ArtifactHeader& header,
                                                    const std::string& path) = 0;
  virtual Result<farm::v1::CompleteJobResponse> CompleteJob(
      const farm::v1::CompleteJobRequest& req) = 0;
  // Downloads the source archive of an attempt the worker holds into `path`, resuming
  // after a broken stream, and checks its size and sha256 against `archive` (DataLoss
  // when they differ).
  virtual Status DownloadSource(int64_t job_id, int32_t attempt,
                                const farm::v1::SourceArchive& archive,
                                const std::string& path) = 0;
  // Writes the bytes of artifact `artifact_id`, which validation job `job_id` (attempt
  // `attempt`, held by this worker) validates, to `path`. The default answers
  // Unimplemented, for fakes that run no validation jobs.
  virtual Status DownloadArtifact(int64_t job_id, int32_t attempt, int64_t artifact_id,
                                  const std::string& path);
  // Ends a pending AcquireJob long poll at once (shutdown).
  virtual void CancelWaits() = 0;
  // Called after UNAVAILABLE: looks the address up again (farmd may have restarted on
  // another port) and reconnects when it changed.
  virtual void Reconnect() = 0;
};

class GrpcFarmClient final : public FarmClient {
 public:
  // `resolve` returns farmd's current address ("127.0.0.1:PORT"); `tls` says how to
  // reach it (common/net/tls.h).
  GrpcFarmClient(std::function<Result<std::string>()> resolve, net::ClientTls tls);
  // Connects to the first resolved address. On failure returns why no address was found,
  // or FailedPrecondition when the address may not be reached with the TLS settings (a
  // non-loopback farmd without --ca or --insecure), NotFound for unreadable PEM files.
  Status Connect();

  Result<farm::v1::RegisterResponse> Register(const farm::v1::RegisterRequest& req,
                                              const std::string& bearer) override;
  void SetToken(const std::string& worker_token) override;
  Result<farm::v1::HeartbeatResponse> Heartbeat(const farm::v1::HeartbeatRequest& req) override;
  Result<farm::v1::AcquireJobResponse> AcquireJob(const farm::v1::AcquireJobRequest& req) override;
  Result<int64_t> UploadLog(int64_t job_id, int32_t attempt,
                            const std::vector<farm::v1::LogLine>& lines) override;
  Result<farm::v1::Artifact> UploadArtifact(const farm::v1::ArtifactHeader& header,
                                            const std::string& path) override;
  Result<farm::v1::CompleteJobResponse> CompleteJob(
      const farm::v1::CompleteJobRequest& req) override;
  Status DownloadSource(int64_t job_id, int32_t attempt, const farm::v1::SourceArchive& archive,
                        const std::string& path) override;
  Status DownloadArtifact(int64_t job_id, int32_t attempt, int64_t artifact_id,
                          const std::string& path) override;
  void CancelWaits() override;
  void Reconnect() override;

 private:
  std::shared_ptr<farm::v1::WorkerService::Stub> stub();
  // One DownloadSource stream from *have on, appended to `out` and `hasher`.
  Status ReadSourceStream(int64_t job_id, int32_t attempt, const farm::v1::SourceArchive& archive,
                          FILE* out, Sha256* hasher, int64_t* have);
  void Prepare(grpc::ClientContext& ctx, int64_t timeout_ms, const std::string& bearer = "");

  std::function<Result<std::string>()> resolve_;
  net::ClientTls tls_;
  std::mutex mu_;
  std::string address_;                                  // guarded by mu_
  std::shared_ptr<farm::v1::WorkerService::Stub> stub_;  // guarded by mu_
  std::string token_;                                    // guarded by mu_
  std::vector<grpc::ClientContext*> waits_;              // guarded by mu_
  bool waits_cancelled_ = false;                         // guarded by mu_
};

}  // namespace farm::agent

#endif  // FARM_WORKER_CLIENT_FARM_CLIENT_H_
