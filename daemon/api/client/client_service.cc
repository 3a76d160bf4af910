#include "daemon/api/client/client_service.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "common/clock.h"
#include "common/log.h"
#include "common/recipe/cell_settings.h"
#include "common/sha256.h"
#include "daemon/api/artifact_stream.h"
#include "daemon/api/handler.h"
#include "daemon/builds/control.h"
#include "daemon/builds/submit.h"
#include "daemon/model/convert.h"
#include "daemon/model/failure.h"
#include "daemon/model/lock_info.h"
#include "daemon/model/torch_proofs.h"
#include "daemon/sched/peers.h"
#include "daemon/sched/placement.h"
#include "daemon/sched/rows.h"

namespace farm::api {

using model::ArtifactToProto;
using model::AttemptToProto;
using model::BuildToProto;
using model::JobToProto;
using model::LogLineToProto;
using model::ParseBlob;
using model::WorkerToProto;

namespace {

// The registered workers, read once for all the jobs of a reply (with many workers,
// reading them per job made a build's reply cost jobs x workers reads), parsed for
// placement only when the fleet changed (FleetCache).
using PlacementView = std::shared_ptr<const sched::FleetView>;

std::optional<PlacementView> ReadPlacementView(const ServiceContext& ctx) {
  auto rows = ctx.store->ListWorkers();
  if (!rows.ok()) return std::nullopt;  // names and reasons are a courtesy; the reply goes out
  return ctx.fleet_cache->Get(*rows);
}

// Entries of a job's unplaceable_reasons at most.
constexpr size_t kMaxReasonEntries = 20;

void AddPlacementReasons(const ServiceContext& ctx, const sched::FleetView& view,
                         const store::JobRow& row, farm::v1::Job* job) {
  sched::Waiting waiting =
      sched::ExplainPendingJob(row, view.fleet, view.peers, ctx.clock->NowUnixMs(),
                               /*max_able_names=*/6);  // the reply has the summary only
  // Per worker in a small fleet, per reason in a large one: a 100-job build that 1000
  // workers cannot take made a 10 MB reply and 100,000 lines of farmctl show.
  auto& reasons = *job->mutable_unplaceable_reasons();
  for (auto& [worker, why] : sched::ReasonEntries(waiting.blocked, kMaxReasonEntries)) {
    reasons[worker] = std::move(why);
  }
  if (view.fleet.empty()) reasons["(none)"] = "no worker is registered";
  job->set_waiting_reason(waiting.summary);
  job->set_unplaceable(waiting.unplaceable);
}

// LoadJob with its attempts, artifacts and the workers already read (nullopt: no names or
// reasons can be given). `in_graph` false: the job neither requires nor is required by any
// (Store::JobsInGraph), so its links are not read.
Result<farm::v1::Job> LoadJobWith(const ServiceContext& ctx, const store::JobRow& row,
                                  const std::vector<store::AttemptRow>& attempts,
                                  const std::vector<store::ArtifactRow>& artifacts,
                                  const std::optional<PlacementView>& view, bool in_graph = true) {
  farm::v1::Job job = JobToProto(row);
  if (view) job.set_worker_name((*view)->NameOf(row.worker_id));
  for (const auto& a : attempts) {
    farm::v1::Attempt* attempt = job.add_attempts();
    *attempt = AttemptToProto(a);
    if (view) attempt->set_worker_name((*view)->NameOf(a.worker_id));
  }
  // Only the attempt that counts (or the reused wheel, attempt 0) shows: wheels uploaded
  // by an attempt whose worker was lost before it completed are kept but not offered.
  for (const auto& a : artifacts) {
    if (a.attempt == row.attempt || a.attempt == 0) *job.add_artifacts() = ArtifactToProto(a);
  }
  if (row.state == store::kJobPending && view) AddPlacementReasons(ctx, **view, row, &job);
  if (in_graph) FARM_RETURN_IF_ERROR(AddJobGraph(ctx, &job));
  // A stable-ABI build: the torches its wheel was proven with (fanout.h).
  if (job.needs().validate_in_size() > 0) {
    FARM_RETURN_IF_ERROR(model::AddTorchProofs(*ctx.store, row, &job));
  }
  return job;
}

// The longest lifetime a token may be created with: ten years.
constexpr int64_t kMaxTokenTtlSeconds = int64_t{10} * 365 * 24 * 3600;

farm::v1::TokenInfo TokenToProto(const store::TokenRow& row) {
  farm::v1::TokenInfo t;
  t.set_id(auth::TokenAuthority::IdOf(row.hash));
  t.set_name(row.name);
  t.set_role(row.role);
  t.set_worker_id(row.worker_id);
  t.set_created_at(FormatRfc3339(row.created_ms));
  if (row.expires_ms > 0) t.set_expires_at(FormatRfc3339(row.expires_ms));
  if (row.revoked_ms > 0) t.set_revoked_at(FormatRfc3339(row.revoked_ms));
  return t;
}

// Failed jobs of a GetBuild reply that carry their failure lines at most.
constexpr int kMaxJobsWithFailureLines = 20;

// Fills job->failure_lines of a failed job: the lines the dashboard shows for it.
Status AddFailureLines(const ServiceContext& ctx, const farm::v1::Recipe& recipe,
                       farm::v1::Job* job) {
  if (job->state() != farm::v1::JOB_FAILED) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto row, ctx.store->GetJob(job->id()));
  FARM_ASSIGN_OR_RETURN(auto attempts, ctx.store->ListAttempts(row.id));
  FARM_ASSIGN_OR_RETURN(model::JobFailure failure,
                        model::ExplainFailure(*ctx.store, row, attempts, recipe, true));
  for (std::string& line : failure.lines) job->add_failure_lines(std::move(line));
  return Status::Ok();
}

// A provisioned job's environment lock: its size and what changed since the previous build
// of its recipe in its cell (model/lock_info.h).
Status AddLockInfo(const ServiceContext& ctx, const store::JobRow& row,
                   const std::string& recipe_name, farm::v1::Job* job) {
  FARM_ASSIGN_OR_RETURN(std::optional<farm::v1::LockInfo> info,
                        model::JobLockInfo(*ctx.store, *ctx.store, row, recipe_name));
  if (info) *job->mutable_lock() = std::move(*info);
  return Status::Ok();
}

// The recipe's `cells:` entries the job's cell matches: what its lease applies.
void AddCellSettings(const farm::v1::Recipe& recipe, farm::v1::Job* job) {
  for (std::string& line : recipe::MatchingCellSettings(recipe, job->cell())) {
    job->add_cell_settings(std::move(line));
  }
}

Result<farm::v1::Recipe> RecipeOfBuild(const ServiceContext& ctx, int64_t build_id) {
  FARM_ASSIGN_OR_RETURN(store::BuildRow build, ctx.store->GetBuild(build_id));
  return model::ParseBlob<farm::v1::Recipe>(build.recipe);
}

}  // namespace

Result<farm::v1::Job> LoadJob(const ServiceContext& ctx, const store::JobRow& row) {
  FARM_ASSIGN_OR_RETURN(auto attempts, ctx.store->ListAttempts(row.id));
  FARM_ASSIGN_OR_RETURN(auto artifacts, ctx.store->ListArtifacts(row.id));
  return LoadJobWith(ctx, row, attempts, artifacts, ReadPlacementView(ctx));
}

Result<farm::v1::Build> LoadBuild(const ServiceContext& ctx, int64_t build_id) {
  store::BuildRow row;
  int64_t schedule_id = 0;
  std::vector<store::JobRow> jobs;
  std::map<int64_t, std::vector<store::AttemptRow>> attempts;
  std::map<int64_t, std::vector<store::ArtifactRow>> artifacts;
  std::set<int64_t> in_graph;
  std::optional<std::vector<store::WorkerRow>> workers;
  // One visit to the store for every read, not one per read (nor per job): with a thousand
  // workers calling, each visit waits its turn.
  FARM_RETURN_IF_ERROR(ctx.store->Together([&]() -> Status {
    FARM_ASSIGN_OR_RETURN(row, ctx.store->GetBuild(build_id));
    auto schedule = ctx.store->ScheduleOfBuild(build_id);  // Unimplemented in other stores
    if (schedule.ok()) schedule_id = schedule.value();
    FARM_ASSIGN_OR_RETURN(jobs, ctx.store->ListJobs(build_id));
    std::vector<int64_t> ids;
    for (const auto& j : jobs) ids.push_back(j.id);
    FARM_ASSIGN_OR_RETURN(attempts, ctx.store->ListAttemptsOfJobs(ids));
    FARM_ASSIGN_OR_RETURN(artifacts, ctx.store->ListArtifactsOfJobs(ids));
    FARM_ASSIGN_OR_RETURN(in_graph, ctx.store->JobsInGraph(ids));
    auto listed = ctx.store->ListWorkers();
    if (listed.ok()) workers = std::move(listed).value();
    return Status::Ok();
  }));
  farm::v1::Build build = BuildToProto(row);
  if (schedule_id > 0) build.set_schedule_id(std::to_string(schedule_id));
  // Names and reasons are a courtesy: without the workers the reply goes out without them.
  std::optional<PlacementView> view;
  if (workers) view = ctx.fleet_cache->Get(*workers);
  for (const auto& j : jobs) {
    farm::v1::Job* job = build.add_jobs();
    FARM_ASSIGN_OR_RETURN(
        *job, LoadJobWith(ctx, j, attempts[j.id], artifacts[j.id], view, in_graph.count(j.id) > 0));
    FARM_RETURN_IF_ERROR(AddLockInfo(ctx, j, row.recipe_name, job));
    AddCellSettings(build.recipe(), job);
  }
  return build;
}

grpc::Status ClientService::SubmitBuild(grpc::ServerContext* call,
                                        const farm::v1::SubmitBuildRequest* req,
                                        farm::v1::SubmitBuildResponse* resp) {
  audit::Entry entry{audit::Action::kBuildSubmit, "recipe file " + req->recipe_path()};
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(int64_t id, ctx_->submitter->Submit(*req, who, &entry));
    FARM_ASSIGN_OR_RETURN(*resp->mutable_build(), LoadBuild(*ctx_, id));
    return Status::Ok();
  });
}

grpc::Status ClientService::GetBuild(grpc::ServerContext* call,
                                     const farm::v1::GetBuildRequest* req, farm::v1::Build* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(*resp, LoadBuild(*ctx_, req->build_id()));
    FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, RecipeOfBuild(*ctx_, req->build_id()));
    // Each failed job's lines cost a read of its log's end: the first few jobs carry them
    // (GetJob gives any job's).
    int with_lines = 0;
    for (auto& job : *resp->mutable_jobs()) {
      if (job.state() != farm::v1::JOB_FAILED || ++with_lines > kMaxJobsWithFailureLines) continue;
      FARM_RETURN_IF_ERROR(AddFailureLines(*ctx_, recipe, &job));
    }
    return Status::Ok();
  });
}

grpc::Status ClientService::ListBuilds(grpc::ServerContext* call,
                                       const farm::v1::ListBuildsRequest* req,
                                       farm::v1::ListBuildsResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    int limit = req->page_size() <= 0 ? 50 : std::min(req->page_size(), 1000);
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListBuilds(req->before_id(), limit));
    bool fleet_read = false;  // the workers are read once, when a pending job needs them
    std::optional<PlacementView> view;
    std::map<std::string, sched::Waiting> explained;  // per cell, needs, backoff and note
    for (const auto& row : rows) {
      farm::v1::Build* b = resp->add_builds();
      *b = BuildToProto(row);
      FARM_ASSIGN_OR_RETURN(auto jobs, ctx_->store->ListJobs(row.id));
      for (const auto& j : jobs) {
        farm::v1::Job* job = b->add_jobs();
        *job = JobToProto(j);
        if (j.state != store::kJobPending) continue;
        // Why it waits, in one sentence (no per-worker reasons): a list can then say
        // which builds no worker can take.
        if (!fleet_read) view = ReadPlacementView(*ctx_), fleet_read = true;
        if (!view) continue;
        std::string key =
            j.cell + '\0' + j.needs + '\0' + std::to_string(j.not_before_ms) + '\0' + j.error;
        auto [it, fresh] = explained.try_emplace(key);
        if (fresh) {
          it->second = sched::ExplainPendingJob(j, (*view)->fleet, (*view)->peers,
                                                ctx_->clock->NowUnixMs(), 0);
        }
        job->set_waiting_reason(it->second.summary);
        job->set_unplaceable(it->second.unplaceable);
      }
    }
    if (static_cast<int>(rows.size()) == limit) resp->set_next_before_id(rows.back().id);
    return Status::Ok();
  });
}

grpc::Status ClientService::CancelBuild(grpc::ServerContext* call,
                                        const farm::v1::CancelBuildRequest* req,
                                        farm::v1::Build* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(ctx_->control->CancelBuild(who, req->build_id()));
    FARM_ASSIGN_OR_RETURN(*resp, LoadBuild(*ctx_, req->build_id()));
    return Status::Ok();
  });
}

grpc::Status ClientService::GetJob(grpc::ServerContext* call, const farm::v1::GetJobRequest* req,
                                   farm::v1::Job* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetJob(req->job_id()));
    FARM_ASSIGN_OR_RETURN(*resp, LoadJob(*ctx_, row));
    FARM_ASSIGN_OR_RETURN(farm::v1::Recipe recipe, RecipeOfBuild(*ctx_, row.build_id));
    FARM_RETURN_IF_ERROR(AddLockInfo(*ctx_, row, recipe.name(), resp));
    AddCellSettings(recipe, resp);
    return AddFailureLines(*ctx_, recipe, resp);
  });
}

grpc::Status ClientService::GetLock(grpc::ServerContext* call, const farm::v1::GetLockRequest* req,
                                    farm::v1::GetLockResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    std::vector<store::JobRow> candidates;
    if (req->job_id() > 0) {
      FARM_ASSIGN_OR_RETURN(store::JobRow row, ctx_->store->GetJob(req->job_id()));
      candidates.push_back(std::move(row));
    } else {
      FARM_ASSIGN_OR_RETURN(candidates, ctx_->store->ListJobs(req->build_id()));
    }
    for (const store::JobRow& row : candidates) {
      const std::string digest = model::ParseBlob<farm::v1::JobNeeds>(row.needs).lock_digest();
      if (digest.empty()) continue;
      FARM_ASSIGN_OR_RETURN(std::optional<store::LockRow> lock, ctx_->store->GetLock(digest));
      if (!lock) return Status::DataLoss("the lock " + digest + " is not in the store");
      FARM_ASSIGN_OR_RETURN(store::BuildRow build, ctx_->store->GetBuild(row.build_id));
      FARM_ASSIGN_OR_RETURN(std::optional<farm::v1::LockInfo> info,
                            model::JobLockInfo(*ctx_->store, *ctx_->store, row, build.recipe_name));
      resp->set_job_id(row.id);
      resp->set_text(lock->text);
      if (info) *resp->mutable_info() = std::move(*info);
      return Status::Ok();
    }
    return Status::NotFound(
        req->job_id() > 0 ? "job " + std::to_string(req->job_id()) + " has no environment lock"
                          : "build " + std::to_string(req->build_id()) +
                                " has no job with an environment lock (its recipe asks "
                                "for no provisioned environment)");
  });
}

grpc::Status ClientService::RetryJob(grpc::ServerContext* call,
                                     const farm::v1::RetryJobRequest* req, farm::v1::Job* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(ctx_->control->RetryJob(who, req->job_id()));
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetJob(req->job_id()));
    FARM_ASSIGN_OR_RETURN(*resp, LoadJob(*ctx_, row));
    return Status::Ok();
  });
}

grpc::Status ClientService::GetJobLog(grpc::ServerContext* call,
                                      const farm::v1::GetJobLogRequest* req,
                                      farm::v1::GetJobLogResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto job, ctx_->store->GetJob(req->job_id()));
    int attempt = req->attempt() > 0 ? req->attempt() : job.attempt;
    int limit = req->limit() <= 0 ? 1000 : std::min(req->limit(), 10000);
    int64_t after = req->after_seq();
    if (req->tail() > 0) {
      FARM_ASSIGN_OR_RETURN(int64_t last, ctx_->store->LastLogSeq(job.id, attempt));
      after = std::max<int64_t>(after, last - req->tail());
    }
    FARM_ASSIGN_OR_RETURN(auto lines, ctx_->store->GetLogLines(job.id, attempt, after, limit));
    for (const auto& l : lines) *resp->add_lines() = LogLineToProto(job.id, attempt, l);
    bool attempt_over =
        attempt < job.attempt || store::IsTerminal(job.state) || job.state == store::kJobPending;
    resp->set_finished(attempt_over && static_cast<int>(lines.size()) < limit);
    return Status::Ok();
  });
}

grpc::Status ClientService::ListWorkers(grpc::ServerContext* call,
                                        const farm::v1::ListWorkersRequest*,
                                        farm::v1::ListWorkersResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListWorkers());
    for (const auto& w : rows) *resp->add_workers() = WorkerToProto(w);
    return Status::Ok();
  });
}

grpc::Status ClientService::DrainWorker(grpc::ServerContext* call,
                                        const farm::v1::DrainWorkerRequest* req,
                                        farm::v1::WorkerInfo* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(std::string id,
                          ctx_->control->DrainWorker(who, req->worker_id(), !req->undo()));
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetWorker(id));
    *resp = WorkerToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::CreateToken(grpc::ServerContext* call,
                                        const farm::v1::CreateTokenRequest* req,
                                        farm::v1::CreateTokenResponse* resp) {
  // A principal is a token's name, so an unnamed token gets a name of its own: two people
  // given unnamed submitter tokens must not own each other's builds.
  std::string name = req->name().empty() ? req->role() + "-" + RandomHex(4) : req->name();
  audit::Entry entry{audit::Action::kTokenCreate,
                     "token \"" + name + "\" (role " + req->role() + ")"};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    if (req->role() == "worker") {
      return Status::InvalidArgument(
          "worker tokens are issued by Register; create an enroll token");
    }
    if (req->ttl_seconds() < 0 || req->ttl_seconds() > kMaxTokenTtlSeconds) {
      return Status::InvalidArgument("ttl_seconds must be between 0 (never expires) and " +
                                     std::to_string(kMaxTokenTtlSeconds));
    }
    FARM_ASSIGN_OR_RETURN(std::string token,
                          ctx_->auth->Create(req->role(), name, "", req->ttl_seconds() * 1000));
    log::Info("token \"" + name + "\" with role " + req->role() + " created by " + who.name);
    resp->set_token(token);
    resp->set_name(name);
    resp->set_role(req->role());
    resp->set_id(auth::TokenAuthority::IdOf(Sha256Hex(token)));
    entry.done = "id " + resp->id();
    if (req->ttl_seconds() > 0) {
      resp->set_expires_at(FormatRfc3339(ctx_->clock->NowUnixMs() + req->ttl_seconds() * 1000));
    }
    return Status::Ok();
  });
}

grpc::Status ClientService::ListTokens(grpc::ServerContext* call,
                                       const farm::v1::ListTokensRequest* /*req*/,
                                       farm::v1::ListTokensResponse* resp) {
  return Handle(ctx_, call, Need::kAdmin, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListTokens());
    for (const auto& row : rows) *resp->add_tokens() = TokenToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::RevokeToken(grpc::ServerContext* call,
                                        const farm::v1::RevokeTokenRequest* req,
                                        farm::v1::TokenInfo* resp) {
  audit::Entry entry{audit::Action::kTokenRevoke, "token " + req->id()};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->auth->Revoke(req->id(), ctx_->clock->NowUnixMs()));
    entry.done = "\"" + row.name + "\" (role " + row.role + ")";
    log::Info("token \"" + row.name + "\" (" + auth::TokenAuthority::IdOf(row.hash) + ", role " +
              row.role + ") revoked by " + who.name);
    *resp = TokenToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::ValidateArtifact(grpc::ServerContext* call,
                                             const farm::v1::ValidateArtifactRequest* req,
                                             farm::v1::Job* resp) {
  return HandleChecked(ctx_, call, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(store::JobRow job,
                          ctx_->control->RevalidateArtifact(who, req->artifact_id()));
    FARM_ASSIGN_OR_RETURN(*resp, LoadJob(*ctx_, job));
    return Status::Ok();
  });
}

grpc::Status ClientService::DownloadArtifact(grpc::ServerContext* call,
                                             const farm::v1::GetArtifactRequest* req,
                                             grpc::ServerWriter<farm::v1::ArtifactChunk>* out) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->GetArtifact(req->artifact_id()));
    if (!ctx_->blobs->Contains(row.sha256)) {
      return Status::DataLoss("blob of artifact " + row.filename + " is missing");
    }
    farm::v1::ArtifactChunk first;
    *first.mutable_artifact() = ArtifactToProto(row);
    if (!out->Write(first)) return Status::Cancelled("client went away");
    return StreamBlob(*ctx_->blobs, row, [out](const std::string& data) {
      farm::v1::ArtifactChunk chunk;
      chunk.set_data(data);
      return out->Write(chunk);
    });
  });
}

}  // namespace farm::api
