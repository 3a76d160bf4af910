// WorkerService: the worker API over gRPC: registration, heartbeats, job leases, log and
// artifact uploads, results. It translates: which worker may take a job and what a
// heartbeat or a completion means are daemon/builds/ (eligibility.h, heartbeat.h,
// completion.h), the leases are the dispatcher's (sched/dispatcher.h), made by FarmServer. A worker
// authenticates with its own token and may only report on attempts it holds; repeated or
// out-of-order messages are idempotent. Nothing throws out of a handler.
#ifndef FARM_DAEMON_API_WORKER_WORKER_SERVICE_H_
#define FARM_DAEMON_API_WORKER_WORKER_SERVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/api/service_context.h"
#include "daemon/api/worker/batch_runner.h"
#include "farm/v1/worker.grpc.pb.h"

namespace farm::api {

// AcquireJob and CompleteJob are served by the callback API: a waiting poll holds no
// thread, and the dispatcher answers it; a completion waits in a queue, and the batch it
// runs in answers it. The other methods are synchronous.
class WorkerService final : public farm::v1::WorkerService::WithCallbackMethod_AcquireJob<
                                farm::v1::WorkerService::WithCallbackMethod_CompleteJob<
                                    farm::v1::WorkerService::Service>> {
 public:
  // `ctx` holds the dispatcher, the heartbeats and the completer (FarmServer makes them).
  explicit WorkerService(ServiceContext* ctx) : ctx_(ctx) {}
  // Ends every waiting poll (empty) and stops dispatching; later polls are answered empty
  // at once. Called before the gRPC server shuts down.
  void StopDispatch();

  grpc::Status Register(grpc::ServerContext*, const farm::v1::RegisterRequest*,
                        farm::v1::RegisterResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const farm::v1::HeartbeatRequest*,
                         farm::v1::HeartbeatResponse*) override;
  grpc::ServerUnaryReactor* AcquireJob(grpc::CallbackServerContext*,
                                       const farm::v1::AcquireJobRequest*,
                                       farm::v1::AcquireJobResponse*) override;
  grpc::Status UploadLog(grpc::ServerContext*, grpc::ServerReader<farm::v1::LogChunk>*,
                         farm::v1::UploadLogResponse*) override;
  grpc::Status UploadArtifact(grpc::ServerContext*, grpc::ServerReader<farm::v1::ArtifactUpload>*,
                              farm::v1::UploadArtifactResponse*) override;
  grpc::ServerUnaryReactor* CompleteJob(grpc::CallbackServerContext*,
                                        const farm::v1::CompleteJobRequest*,
                                        farm::v1::CompleteJobResponse*) override;
  // sources.cc
  grpc::Status DownloadSource(grpc::ServerContext*, const farm::v1::DownloadSourceRequest*,
                              grpc::ServerWriter<farm::v1::SourceChunk>*) override;
  grpc::Status DownloadArtifact(grpc::ServerContext*, const farm::v1::WorkerArtifactRequest*,
                                grpc::ServerWriter<farm::v1::ArtifactData>*) override;

 private:
  // One CompleteJob waiting for its batch.
  struct PendingCompletion {
    Principal who;
    const farm::v1::CompleteJobRequest* req;
    farm::v1::CompleteJobResponse* resp;
    grpc::ServerUnaryReactor* reactor;
    Result<int> state = Status::Internal("the completion did not run");
    Status release_error;
  };
  // Answers a completion once its batch has run.
  void Answer(PendingCompletion& done);
  // Completes a batch of CompleteJob calls (builds::Completer) in one store transaction (a
  // job's completion that fails undoes only its own writes; a failed commit fails the
  // whole batch), then answers each.
  void CompleteBatch(std::vector<std::unique_ptr<PendingCompletion>>& batch);
  // Fills `resp` with the assignment of a leased job (none when `outcome` holds none).
  Status Answer(Result<std::optional<store::JobRow>> outcome, const std::string& worker_name,
                farm::v1::AcquireJobResponse* resp);

  ServiceContext* ctx_;
  // Concurrent completions share a transaction and one flush (at most 64 per batch: a
  // batch holds the store for a few milliseconds at most).
  BatchRunner<PendingCompletion> completions_{
      [this](std::vector<std::unique_ptr<PendingCompletion>>& batch) { CompleteBatch(batch); }, 64};
};

}  // namespace farm::api

#endif  // FARM_DAEMON_API_WORKER_WORKER_SERVICE_H_
