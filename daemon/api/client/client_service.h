// ClientService: the client API over gRPC (farm.v1.FarmService: farmctl, scripts, the
// dashboard's writes), a file per area. Every handler authenticates first, translates the
// request for the use case that decides (daemon/builds/: submit, cancel, retry, drain,
// revalidate) or reads the store, and converts every failure to a gRPC status; nothing
// throws out.
#ifndef FARM_DAEMON_API_CLIENT_CLIENT_SERVICE_H_
#define FARM_DAEMON_API_CLIENT_CLIENT_SERVICE_H_

#include <memory>

#include "daemon/api/service_context.h"
#include "daemon/builds/sources.h"
#include "farm/v1/client.grpc.pb.h"

namespace farm::api {

class ClientService final : public farm::v1::FarmService::Service {
 public:
  explicit ClientService(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::Status SubmitBuild(grpc::ServerContext*, const farm::v1::SubmitBuildRequest*,
                           farm::v1::SubmitBuildResponse*) override;
  grpc::Status GetBuild(grpc::ServerContext*, const farm::v1::GetBuildRequest*,
                        farm::v1::Build*) override;
  grpc::Status ListBuilds(grpc::ServerContext*, const farm::v1::ListBuildsRequest*,
                          farm::v1::ListBuildsResponse*) override;
  grpc::Status CancelBuild(grpc::ServerContext*, const farm::v1::CancelBuildRequest*,
                           farm::v1::Build*) override;
  grpc::Status WatchBuild(grpc::ServerContext*, const farm::v1::WatchBuildRequest*,
                          grpc::ServerWriter<farm::v1::BuildEvent>*) override;
  grpc::Status GetJob(grpc::ServerContext*, const farm::v1::GetJobRequest*,
                      farm::v1::Job*) override;
  grpc::Status GetLock(grpc::ServerContext*, const farm::v1::GetLockRequest*,
                       farm::v1::GetLockResponse*) override;
  grpc::Status RetryJob(grpc::ServerContext*, const farm::v1::RetryJobRequest*,
                        farm::v1::Job*) override;
  grpc::Status GetJobLog(grpc::ServerContext*, const farm::v1::GetJobLogRequest*,
                         farm::v1::GetJobLogResponse*) override;
  grpc::Status ListWorkers(grpc::ServerContext*, const farm::v1::ListWorkersRequest*,
                           farm::v1::ListWorkersResponse*) override;
  grpc::Status DrainWorker(grpc::ServerContext*, const farm::v1::DrainWorkerRequest*,
                           farm::v1::WorkerInfo*) override;
  grpc::Status CreateToken(grpc::ServerContext*, const farm::v1::CreateTokenRequest*,
                           farm::v1::CreateTokenResponse*) override;
  grpc::Status ListTokens(grpc::ServerContext*, const farm::v1::ListTokensRequest*,
                          farm::v1::ListTokensResponse*) override;
  grpc::Status RevokeToken(grpc::ServerContext*, const farm::v1::RevokeTokenRequest*,
                           farm::v1::TokenInfo*) override;
  grpc::Status DownloadArtifact(grpc::ServerContext*, const farm::v1::GetArtifactRequest*,
                                grpc::ServerWriter<farm::v1::ArtifactChunk>*) override;
  // sources.cc
  grpc::Status FindSource(grpc::ServerContext*, const farm::v1::FindSourceRequest*,
                          farm::v1::FindSourceResponse*) override;
  grpc::Status UploadSource(grpc::ServerContext*, grpc::ServerReader<farm::v1::SourceUpload>*,
                            farm::v1::SourceUploadResponse*) override;
  grpc::Status ValidateArtifact(grpc::ServerContext*, const farm::v1::ValidateArtifactRequest*,
                                farm::v1::Job*) override;
  // cache_handlers.cc
  grpc::Status AddToCache(grpc::ServerContext*, grpc::ServerReader<farm::v1::CacheAdd>*,
                          farm::v1::CacheAddResponse*) override;
  grpc::Status ListCache(grpc::ServerContext*, const farm::v1::ListCacheRequest*,
                         farm::v1::ListCacheResponse*) override;
  // schedule_handlers.cc
  grpc::Status CreateSchedule(grpc::ServerContext*, const farm::v1::CreateScheduleRequest*,
                              farm::v1::Schedule*) override;
  grpc::Status ListSchedules(grpc::ServerContext*, const farm::v1::ListSchedulesRequest*,
                             farm::v1::ListSchedulesResponse*) override;
  grpc::Status PauseSchedule(grpc::ServerContext*, const farm::v1::ScheduleRef*,
                             farm::v1::Schedule*) override;
  grpc::Status ResumeSchedule(grpc::ServerContext*, const farm::v1::ScheduleRef*,
                              farm::v1::Schedule*) override;
  grpc::Status DeleteSchedule(grpc::ServerContext*, const farm::v1::ScheduleRef*,
                              farm::v1::DeleteScheduleResponse*) override;
  grpc::Status RunScheduleNow(grpc::ServerContext*, const farm::v1::RunScheduleNowRequest*,
                              farm::v1::ScheduleRun*) override;
  grpc::Status UpdateSchedule(grpc::ServerContext*, const farm::v1::UpdateScheduleRequest*,
                              farm::v1::Schedule*) override;
  // host_handlers.cc
  grpc::Status AddHost(grpc::ServerContext*, const farm::v1::AddHostRequest*,
                       farm::v1::Host*) override;
  grpc::Status ProvisionHost(grpc::ServerContext*, const farm::v1::ProvisionHostRequest*,
                             farm::v1::Host*) override;
  grpc::Status ListHosts(grpc::ServerContext*, const farm::v1::ListHostsRequest*,
                         farm::v1::ListHostsResponse*) override;
  // provenance_handlers.cc
  grpc::Status GetProvenanceKeys(grpc::ServerContext*, const farm::v1::GetProvenanceKeysRequest*,
                                 farm::v1::ProvenanceKeys*) override;
  grpc::Status RotateProvenanceKey(grpc::ServerContext*,
                                   const farm::v1::RotateProvenanceKeyRequest*,
                                   farm::v1::ProvenanceKeys*) override;
  grpc::Status RevokeProvenanceKey(grpc::ServerContext*,
                                   const farm::v1::RevokeProvenanceKeyRequest*,
                                   farm::v1::ProvenanceKeys*) override;
  grpc::Status GetArtifactProvenance(grpc::ServerContext*, const farm::v1::GetArtifactRequest*,
                                     farm::v1::ArtifactProvenance*) override;
  grpc::Status GetServerInfo(grpc::ServerContext*, const farm::v1::GetServerInfoRequest*,
                             farm::v1::ServerInfo*) override;
  // publish_handlers.cc
  grpc::Status PublishBuild(grpc::ServerContext*, const farm::v1::PublishBuildRequest*,
                            farm::v1::PublishBuildResponse*) override;
  grpc::Status ListPublications(grpc::ServerContext*, const farm::v1::ListPublicationsRequest*,
                                farm::v1::ListPublicationsResponse*) override;
  // quota_handlers.cc
  grpc::Status GetQuota(grpc::ServerContext*, const farm::v1::GetQuotaRequest*,
                        farm::v1::Quota*) override;
  grpc::Status GetCoverage(grpc::ServerContext*, const farm::v1::GetCoverageRequest*,
                           farm::v1::Coverage*) override;
  // request_handlers.cc
  grpc::Status FileWheelRequest(grpc::ServerContext*, const farm::v1::WheelRequestSpec*,
                                farm::v1::FileWheelRequestResponse*) override;
  grpc::Status ListWheelRequests(grpc::ServerContext*, const farm::v1::ListWheelRequestsRequest*,
                                 farm::v1::ListWheelRequestsResponse*) override;
  grpc::Status DecideWheelRequest(grpc::ServerContext*, const farm::v1::DecideWheelRequestRequest*,
                                  farm::v1::WheelRequest*) override;
  grpc::Status SetQuota(grpc::ServerContext*, const farm::v1::SetQuotaRequest*,
                        farm::v1::Quota*) override;
  // owner_handlers.cc
  grpc::Status ListRecipeNames(grpc::ServerContext*, const farm::v1::ListRecipeNamesRequest*,
                               farm::v1::ListRecipeNamesResponse*) override;
  grpc::Status TransferRecipeName(grpc::ServerContext*, const farm::v1::TransferRecipeNameRequest*,
                                  farm::v1::RecipeName*) override;
  grpc::Status ListProjectNames(grpc::ServerContext*, const farm::v1::ListProjectNamesRequest*,
                                farm::v1::ListProjectNamesResponse*) override;
  grpc::Status TransferProjectName(grpc::ServerContext*, const farm::v1::TransferRecipeNameRequest*,
                                   farm::v1::RecipeName*) override;
  grpc::Status ListAudit(grpc::ServerContext*, const farm::v1::ListAuditRequest*,
                         farm::v1::ListAuditResponse*) override;

 private:
  ServiceContext* ctx_;
};

// Loads a build with its jobs, attempts, artifacts and, for pending jobs, the reason each
// registered worker cannot take them.
Result<farm::v1::Build> LoadBuild(const ServiceContext& ctx, int64_t build_id);
Result<farm::v1::Job> LoadJob(const ServiceContext& ctx, const store::JobRow& row);

// The jobs `job_id` requires with the wheels it was given (graph.cc); empty for a job of a
// recipe without `requires:`.
Result<google::protobuf::RepeatedPtrField<farm::v1::JobInput>> LoadJobInputs(
    const ServiceContext& ctx, int64_t job_id);
// Fills job->inputs and job->consumers.
Status AddJobGraph(const ServiceContext& ctx, farm::v1::Job* job);

// The source archives farmd keeps, as the use cases read them.
builds::SourceDeps SourceDepsOf(const ServiceContext& ctx);

}  // namespace farm::api

#endif  // FARM_DAEMON_API_CLIENT_CLIENT_SERVICE_H_
