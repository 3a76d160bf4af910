#include "daemon/api/worker/worker_service.h"

#include <algorithm>
#include <optional>

#include "common/log.h"
#include "common/recipe/cell_environment.h"
#include "common/recipe/cell_settings.h"
#include "daemon/api/artifact_stream.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/builds/completion.h"
#include "daemon/builds/eligibility.h"
#include "daemon/builds/heartbeat.h"
#include "daemon/builds/new_torch.h"
#include "daemon/builds/recipe_cache.h"
#include "daemon/builds/registration.h"
#include "daemon/locks/env_locker.h"
#include "daemon/model/convert.h"
#include "daemon/sched/dispatcher.h"
#include "daemon/sched/placement.h"

namespace farm::api {

using model::ParseBlob;
namespace {

Status CheckSelf(const Principal& who, const std::string& worker_id) {
  if (who.worker_id != worker_id) {
    return Status::PermissionDenied("token of worker " + who.worker_id + " used for " + worker_id);
  }
  return Status::Ok();
}

builds::RegistrationDeps RegistrationDepsOf(const ServiceContext& ctx) {
  return {.workers = ctx.store,
          .leases = ctx.store,
          .clock = ctx.clock,
          .issue_token = [auth = ctx.auth](
                             const std::string& name,
                             const std::string& id) { return auth->Create("worker", name, id); },
          .serves_toolkits = ctx.serves_toolkits};
}

}  // namespace

namespace {

// The lock the job's environment installs (JobNeeds.lock_digest), as text. A provisioned job
// queued by a farmd that resolved no locks has none: its lock is resolved now (this lease's
// only; a retry resolves again).
Status AttachLock(const ServiceContext& ctx, const store::JobRow& job,
                  farm::v1::ProvisionSpec* spec) {
  std::string digest = ParseBlob<farm::v1::JobNeeds>(job.needs).lock_digest();
  if (digest.empty()) {
    if (ctx.locker == nullptr) {
      return Status::FailedPrecondition("job " + std::to_string(job.id) +
                                        " has no environment lock and this farmd resolves none");
    }
    FARM_ASSIGN_OR_RETURN(std::vector<locks::CellLock> locked, ctx.locker->LockAll({*spec}));
    digest = locked[0].digest;
  }
  FARM_ASSIGN_OR_RETURN(std::optional<store::LockRow> row, ctx.store->GetLock(digest));
  if (!row) {
    return Status::DataLoss("the lock " + digest + " of job " + std::to_string(job.id) +
                            " is not in the store");
  }
  spec->set_lock(row->text);
  spec->set_lock_digest(digest);
  return Status::Ok();
}

Result<farm::v1::JobAssignment> MakeAssignment(const ServiceContext& ctx,
                                               const store::JobRow& job) {
  farm::v1::JobAssignment a;
  a.set_job_id(job.id);
  a.set_attempt(job.attempt);
  a.set_build_id(job.build_id);
  FARM_ASSIGN_OR_RETURN(builds::LeasedBuild build, ctx.recipes->Get(job.build_id));
  *a.mutable_recipe() = std::move(build.recipe);
  a.set_cache_namespace(build.cache_namespace);
  *a.mutable_cell() = ParseBlob<farm::v1::MatrixCell>(job.cell);
  // The recipe's `cells:` entries that match the cell, applied here so the worker runs the
  // recipe as that cell has it (env, timeout, unrequested_archs, build requirements) and
  // logs what it received.
  recipe::CellRecipe cell_recipe = recipe::ApplyCellSettings(a.recipe(), a.cell());
  *a.mutable_recipe() = std::move(cell_recipe.recipe);
  for (std::string& line : cell_recipe.applied) a.add_cell_settings(std::move(line));
  // The cell's environment travels with the lease, with the lock resolved for it at
  // submit: the worker installs exactly that.
  if (a.recipe().has_environment()) {
    // A proof with a torch released after the build: the build's recipe does not map it.
    std::string new_torch = ParseBlob<farm::v1::JobNeeds>(job.needs).new_torch();
    if (!new_torch.empty()) *a.mutable_recipe() = builds::WithTorchRelease(a.recipe(), new_torch);
    FARM_ASSIGN_OR_RETURN(*a.mutable_environment(),
                          job.kind == store::kJobValidate
                              ? recipe::ValidationEnvironment(a.recipe(), a.cell())
                              : recipe::CellEnvironment(a.recipe(), a.cell()));
    FARM_RETURN_IF_ERROR(AttachLock(ctx, job, a.mutable_environment()));
  }
  a.set_timeout_seconds(a.recipe().timeout_seconds() > 0 ? a.recipe().timeout_seconds() : 3600);
  a.set_kind(job.kind == store::kJobValidate ? farm::v1::JOB_VALIDATE : farm::v1::JOB_BUILD);
  if (job.kind == store::kJobValidate) {
    FARM_ASSIGN_OR_RETURN(auto artifacts, ctx.store->ListArtifacts(job.target_job_id));
    for (const auto& artifact : artifacts) {
      if (artifact.attempt == job.target_attempt)
        *a.add_artifacts() = model::ArtifactToProto(artifact);
    }
  }
  // A validation job validates against the wheels its target was built with. A build job
  // of a recipe without requirements consumes none: no store read on the lease path.
  if (job.kind == store::kJobValidate || a.recipe().requirements_size() > 0) {
    FARM_ASSIGN_OR_RETURN(
        *a.mutable_inputs(),
        LoadJobInputs(ctx, job.kind == store::kJobValidate ? job.target_job_id : job.id));
  }
  return a;
}

// A job's worker may read the wheels it validates (a validation job) or consumes (the
// inputs of a job with requirements, or of the build job a validation job validates), and
// no others.
Result<store::ArtifactRow> ArtifactForJob(const ServiceContext& ctx, const Principal& who,
                                          const farm::v1::WorkerArtifactRequest& req) {
  FARM_RETURN_IF_ERROR(builds::CheckHolds(*ctx.store, who.worker_id, req.job_id(), req.attempt()));
  FARM_ASSIGN_OR_RETURN(store::JobRow job, ctx.store->GetJob(req.job_id()));
  FARM_ASSIGN_OR_RETURN(store::ArtifactRow artifact, ctx.store->GetArtifact(req.artifact_id()));
  FARM_ASSIGN_OR_RETURN(
      auto inputs,
      ctx.store->ListJobInputs(job.kind == store::kJobValidate ? job.target_job_id : job.id));
  for (const auto& input : inputs) {
    if (input.artifact.id == artifact.id) return artifact;
  }
  if (job.kind != store::kJobValidate || artifact.job_id != job.target_job_id ||
      artifact.attempt != job.target_attempt) {
    return Status::PermissionDenied("job " + std::to_string(req.job_id()) +
                                    " does not validate artifact " +
                                    std::to_string(req.artifact_id()));
  }
  return artifact;
}

}  // namespace

grpc::Status WorkerService::Register(grpc::ServerContext* call,
                                     const farm::v1::RegisterRequest* req,
                                     farm::v1::RegisterResponse* resp) {
  // A registration makes a worker token: recorded like every token made.
  audit::Entry entry{audit::Action::kWorkerRegister, "worker " + req->name()};
  return HandleMutation(ctx_, call, Need::kEnroll, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(builds::Registration r,
                          builds::RegisterWorker(RegistrationDepsOf(*ctx_), who, req->worker_id(),
                                                 req->name(), req->capabilities()));
    ctx_->heartbeats->Registered(r.worker_id);
    auto cn = call->auth_context()->FindPropertyValues("x509_common_name");
    std::string cert = cn.empty() ? "" : ", certificate " + std::string(cn[0].data(), cn[0].size());
    const std::string state(store::WorkerStateName(r.state));
    log::Info("worker " + r.name + " registered as " + r.worker_id + " (" +
              std::to_string(req->capabilities().gpus_size()) + " GPU(s), state " + state + cert +
              ")");
    entry.done = "id " + r.worker_id + ", state " + state;
    resp->set_worker_id(r.worker_id);
    resp->set_worker_token(r.token);
    resp->set_heartbeat_interval_ms(static_cast<int32_t>(ctx_->tunables.heartbeat_ms));
    resp->set_lease_ms(static_cast<int32_t>(ctx_->tunables.lease_ms));
    resp->set_upstream_url(ctx_->upstream_url);
    return Status::Ok();
  });
}

grpc::Status WorkerService::Heartbeat(grpc::ServerContext* call,
                                      const farm::v1::HeartbeatRequest* req,
                                      farm::v1::HeartbeatResponse* resp) {
  return Handle(ctx_, call, Need::kWorker, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(CheckSelf(who, req->worker_id()));
    FARM_RETURN_IF_ERROR(ctx_->heartbeats->Beat(who.worker_id, *req, resp));
    resp->set_upstream_url(ctx_->upstream_url);
    return Status::Ok();
  });
}

namespace {

// One AcquireJob long poll: queued in the dispatcher, answered when it hands the poll a job,
// at the deadline, or when the client goes away. Deletes itself when gRPC is done with it.
class AcquireReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit AcquireReactor(sched::Dispatcher* dispatcher) : dispatcher_(dispatcher) {}

  // Queues the poll (`waiter.done` must end it with Finish).
  void Wait(sched::Dispatcher::Waiter waiter) {
    int64_t ticket = dispatcher_->Add(std::move(waiter));
    std::lock_guard lock(mu_);
    ticket_ = ticket;
    if (cancelled_) dispatcher_->Cancel(ticket_);
  }
  void OnCancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    if (ticket_ > 0) dispatcher_->Cancel(ticket_);
  }
  void OnDone() override { delete this; }

 private:
  sched::Dispatcher* dispatcher_;
  std::mutex mu_;
  int64_t ticket_ = 0;      // guarded by mu_
  bool cancelled_ = false;  // guarded by mu_
};

}  // namespace

void WorkerService::StopDispatch() {
  ctx_->dispatcher->Stop();
  completions_.Stop();  // the queued completions are answered first
}

grpc::ServerUnaryReactor* WorkerService::AcquireJob(grpc::CallbackServerContext* call,
                                                    const farm::v1::AcquireJobRequest* req,
                                                    farm::v1::AcquireJobResponse* resp) {
  auto* reactor = new AcquireReactor(ctx_->dispatcher);
  // Everything but the wait happens here; nothing throws out of a gRPC callback.
  auto checked = Guarded("AcquireJob", [&]() -> Result<std::optional<sched::Dispatcher::Waiter>> {
    FARM_ASSIGN_OR_RETURN(Principal who, AuthorizePeer(*ctx_, *call, Need::kWorker));
    FARM_RETURN_IF_ERROR(CheckSelf(who, req->worker_id()));
    return builds::MayTakeJob({.workers = ctx_->store, .visits = ctx_->store}, who.worker_id);
  });
  if (!checked.ok() || !checked->has_value()) {
    reactor->Finish(ToGrpc(checked.status()));
    return reactor;
  }
  sched::Dispatcher::Waiter waiter = std::move(**checked);
  waiter.deadline_steady_ms = ctx_->clock->SteadyMs() + std::clamp(req->wait_ms(), 0, 10000);
  waiter.done = [this, reactor, resp,
                 name = waiter.worker_name](Result<std::optional<store::JobRow>> outcome) {
    reactor->Finish(ToGrpc(Answer(std::move(outcome), name, resp)));
  };
  reactor->Wait(std::move(waiter));
  return reactor;
}

Status WorkerService::Answer(Result<std::optional<store::JobRow>> outcome,
                             const std::string& worker_name, farm::v1::AcquireJobResponse* resp) {
  return Guarded("AcquireJob", [&]() -> Status {
    FARM_RETURN_IF_ERROR(outcome.status());
    if (!outcome->has_value()) return Status::Ok();
    const store::JobRow& job = **outcome;
    FARM_ASSIGN_OR_RETURN(*resp->mutable_job(), MakeAssignment(*ctx_, job));
    log::Info("job " + std::to_string(job.id) + " attempt " + std::to_string(job.attempt) +
              " leased to " + worker_name);
    return Status::Ok();
  });
}

grpc::Status WorkerService::UploadLog(grpc::ServerContext* call,
                                      grpc::ServerReader<farm::v1::LogChunk>* in,
                                      farm::v1::UploadLogResponse* resp) {
  return Handle(ctx_, call, Need::kWorker, [&](const Principal& who) -> Status {
    farm::v1::LogChunk chunk;
    std::pair<int64_t, int> checked{0, 0};
    while (in->Read(&chunk)) {
      std::pair<int64_t, int> key{chunk.job_id(), chunk.attempt()};
      if (key != checked) {
        FARM_RETURN_IF_ERROR(
            builds::CheckHolds(*ctx_->store, who.worker_id, chunk.job_id(), chunk.attempt()));
        checked = key;
      }
      std::vector<store::LogLineRow> lines;
      for (const auto& l : chunk.lines()) {
        lines.push_back({l.seq(), static_cast<int>(l.stream()), l.text(), l.time_unix_ms()});
      }
      FARM_ASSIGN_OR_RETURN(int64_t acked,
                            ctx_->store->AppendLogLines(chunk.job_id(), chunk.attempt(), lines,
                                                        ctx_->tunables.max_log_bytes));
      resp->set_acked_seq(acked);
    }
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* WorkerService::CompleteJob(grpc::CallbackServerContext* call,
                                                     const farm::v1::CompleteJobRequest* req,
                                                     farm::v1::CompleteJobResponse* resp) {
  auto* reactor = call->DefaultReactor();
  Result<Principal> who =
      Guarded("CompleteJob", [&] { return AuthorizePeer(*ctx_, *call, Need::kWorker); });
  if (!who.ok()) {
    reactor->Finish(ToGrpc(who.status()));
    return reactor;
  }
  auto pending = std::make_unique<PendingCompletion>(PendingCompletion{
      .who = std::move(who).value(), .req = req, .resp = resp, .reactor = reactor});
  if (!completions_.Add(pending)) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "farmd is stopping"));
  }
  return reactor;
}

void WorkerService::Answer(PendingCompletion& done) {
  Status answer = Guarded("CompleteJob", [&]() -> Status {
    if (!done.release_error.ok()) {
      log::Warn("releasing held jobs: " + done.release_error.ToString());
    }
    FARM_ASSIGN_OR_RETURN(int state, std::move(done.state));
    ctx_->heartbeats->Ended(done.req->job_id());
    log::Info("job " + std::to_string(done.req->job_id()) + " attempt " +
              std::to_string(done.req->attempt()) + " ended: state " +
              farm::v1::JobState_Name(static_cast<farm::v1::JobState>(state)));
    done.resp->set_state(static_cast<farm::v1::JobState>(state));
    return Status::Ok();
  });
  done.reactor->Finish(ToGrpc(answer));
}

void WorkerService::CompleteBatch(std::vector<std::unique_ptr<PendingCompletion>>& batch) {
  // Nothing leaves the batch's thread; one completion that throws fails alone.
  Status committed = Guarded("CompleteJob", [&] {
    return ctx_->store->TogetherInOneTransaction([&]() -> Status {
      for (auto& c : batch) {
        c->state = Guarded("CompleteJob", [&] {
          return ctx_->completer->Complete(c->who.worker_id, *c->req, &c->release_error);
        });
      }
      return Status::Ok();
    });
  });
  for (auto& c : batch) {
    if (!committed.ok()) c->state = committed;  // none of the batch was kept
    Answer(*c);
  }
}

grpc::Status WorkerService::DownloadArtifact(grpc::ServerContext* call,
                                             const farm::v1::WorkerArtifactRequest* req,
                                             grpc::ServerWriter<farm::v1::ArtifactData>* out) {
  return Handle(ctx_, call, Need::kWorker, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(store::ArtifactRow artifact, ArtifactForJob(*ctx_, who, *req));
    return StreamBlob(*ctx_->blobs, artifact, [out](const std::string& data) {
      farm::v1::ArtifactData chunk;
      chunk.set_data(data);
      return out->Write(chunk);
    });
  });
}

}  // namespace farm::api
