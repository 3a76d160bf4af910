#include "daemon/api/worker/worker_service.h"

#include <algorithm>
#include <optional>

#include "common/log.h"
#include "common/recipe/cell_environment.h"
#include "common/sha256.h"
#include "daemon/api/artifact_stream.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/attest/attestor.h"
#include "daemon/builds/build_key.h"
#include "daemon/locks/env_locker.h"
#include "daemon/model/convert.h"
#include "daemon/sched/fanout.h"
#include "daemon/sched/placement.h"
#include "daemon/sched/retry.h"

namespace farm::api {

using model::ParseBlob;
namespace {

Status CheckSelf(const Principal& who, const std::string& worker_id) {
  if (who.worker_id != worker_id) {
    return Status::PermissionDenied("token of worker " + who.worker_id + " used for " + worker_id);
  }
  return Status::Ok();
}

// Progress and peak RSS of a running build, for watchers. The store ignores reports on
// attempts the worker does not hold; a failure costs only the figures, never the
// heartbeat.
void RecordLiveFigures(const ServiceContext& ctx, ProgressThrottle& throttle,
                       const std::string& worker_id, const farm::v1::RunningJob& running) {
  if (running.units_done() <= 0 && running.units_total() <= 0 && running.peak_rss_bytes() <= 0) {
    return;
  }
  if (!throttle.Allow(running.job_id(), ctx.clock->SteadyMs())) return;
  store::ProgressReport report{running.job_id(),
                               running.attempt(),
                               worker_id,
                               std::max<int64_t>(0, running.units_done()),
                               std::max<int64_t>(0, running.units_total()),
                               std::max<int64_t>(0, running.peak_rss_bytes())};
  auto recorded = ctx.store->RecordProgress(report);
  if (!recorded.ok()) {
    log::Debug("progress of job " + std::to_string(running.job_id()) + ": " +
               recorded.status().ToString());
  }
}

}  // namespace

bool ProgressThrottle::Allow(int64_t job_id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = last_ms_.emplace(job_id, now_ms);
  if (fresh) {
    if (last_ms_.size() > kMaxJobs) last_ms_ = {{job_id, now_ms}};
    return true;
  }
  if (now_ms - it->second < kEveryMs) return false;
  it->second = now_ms;
  return true;
}

int64_t BeatWriteEveryMs(const Tunables& t) { return std::clamp<int64_t>(t.lease_ms / 6, 1, 5000); }

bool BeatWrites::Due(const std::string& worker_id, int64_t now_ms, int64_t every_ms) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = written_ms_.emplace(worker_id, now_ms);
  if (fresh) {
    if (written_ms_.size() > kMaxWorkers) written_ms_ = {{worker_id, now_ms}};
    return true;
  }
  if (now_ms - it->second < every_ms && now_ms >= it->second) return false;
  it->second = now_ms;
  return true;
}

void BeatWrites::Forget(const std::string& worker_id) {
  std::lock_guard lock(mu_);
  written_ms_.erase(worker_id);
}

void ProgressThrottle::Forget(int64_t job_id) {
  std::lock_guard lock(mu_);
  last_ms_.erase(job_id);
}

Status CheckHolds(const ServiceContext& ctx, const Principal& who, int64_t job_id, int attempt) {
  FARM_ASSIGN_OR_RETURN(auto attempts, ctx.store->ListAttempts(job_id));
  for (const auto& a : attempts) {
    if (a.number == attempt) {
      if (a.worker_id == who.worker_id) return Status::Ok();
      break;
    }
  }
  return Status::PermissionDenied("worker " + who.worker_id + " does not hold attempt " +
                                  std::to_string(attempt) + " of job " + std::to_string(job_id));
}

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

Result<farm::v1::JobAssignment> MakeAssignment(const ServiceContext& ctx, RecipeCache& recipes,
                                               const store::JobRow& job) {
  farm::v1::JobAssignment a;
  a.set_job_id(job.id);
  a.set_attempt(job.attempt);
  a.set_build_id(job.build_id);
  FARM_ASSIGN_OR_RETURN(LeasedBuild build, recipes.Get(ctx, job.build_id));
  *a.mutable_recipe() = std::move(build.recipe);
  a.set_cache_namespace(build.cache_namespace);
  *a.mutable_cell() = ParseBlob<farm::v1::MatrixCell>(job.cell);
  // The cell's environment travels with the lease, with the lock resolved for it at
  // submit: the worker installs exactly that.
  if (a.recipe().has_environment()) {
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

// What the jobs a unified-memory worker runs hold of its RAM for GPU validation (one store
// read, only for such workers).
Result<double> HeldValidationGb(store::Store& store, const std::string& worker_id,
                                const farm::v1::Capabilities& caps) {
  if (!sched::HasUnifiedMemory(caps)) return 0.0;
  FARM_ASSIGN_OR_RETURN(std::vector<store::JobRow> rows, store.ListRunningJobs(worker_id));
  std::vector<sched::RunningJob> running;
  for (const store::JobRow& row : rows) {
    running.push_back({ParseBlob<farm::v1::MatrixCell>(row.cell), row.validation_mib / 1024.0});
  }
  return sched::HeldValidationGb(caps, running);
}

// A job's worker may read the wheels it validates (a validation job) or consumes (the
// inputs of a job with requirements, or of the build job a validation job validates), and
// no others.
Result<store::ArtifactRow> ArtifactForJob(const ServiceContext& ctx, const Principal& who,
                                          const farm::v1::WorkerArtifactRequest& req) {
  FARM_RETURN_IF_ERROR(CheckHolds(ctx, who, req.job_id(), req.attempt()));
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
    int64_t now = ctx_->clock->NowUnixMs();
    std::string id = who.role == "worker" ? who.worker_id : "w-" + RandomHex(6);
    if (who.role == "worker" && !req->worker_id().empty())
      FARM_RETURN_IF_ERROR(CheckSelf(who, req->worker_id()));
    if (who.role != "worker") {
      FARM_ASSIGN_OR_RETURN(std::string token, ctx_->auth->Create("worker", req->name(), id));
      resp->set_worker_token(token);
    }
    // A worker whose probe failed is kept out of placement until an admin looks.
    store::WorkerState state = req->capabilities().probe_error().empty()
                                   ? store::WorkerState::kIdle
                                   : store::WorkerState::kQuarantined;
    if (who.role == "worker") {
      // A worker that registers again has restarted: the builds it held died with it.
      FARM_ASSIGN_OR_RETURN(
          auto lost, ctx_->store->ReleaseWorkerJobs(id, {}, "worker " + id + " restarted", now));
      for (int64_t job : lost)
        log::Warn("job " + std::to_string(job) + " requeued: worker " + id + " restarted");
    }
    farm::v1::Capabilities caps = req->capabilities();
    sched::SettleProvisioning(ctx_->serves_toolkits, &caps);
    store::WorkerRow row{
        id, req->name().empty() ? id : req->name(), caps.SerializeAsString(), state, now, now};
    FARM_RETURN_IF_ERROR(ctx_->store->UpsertWorker(row));
    beat_writes_.Forget(id);
    auto cn = call->auth_context()->FindPropertyValues("x509_common_name");
    std::string cert = cn.empty() ? "" : ", certificate " + std::string(cn[0].data(), cn[0].size());
    log::Info("worker " + row.name + " registered as " + id + " (" +
              std::to_string(req->capabilities().gpus_size()) + " GPU(s), state " +
              std::string(store::WorkerStateName(state)) + cert + ")");
    resp->set_worker_id(id);
    entry.done = "id " + id + ", state " + std::string(store::WorkerStateName(state));
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
    // One visit to the store for the beat's reads and writes.
    return ctx_->store->Together([&] { return Beat(who, *req, resp); });
  });
}

Status WorkerService::Beat(const Principal& who, const farm::v1::HeartbeatRequest& req,
                           farm::v1::HeartbeatResponse* resp) {
  int64_t now = ctx_->clock->NowUnixMs();
  FARM_ASSIGN_OR_RETURN(auto worker, ctx_->store->GetWorker(who.worker_id));
  bool draining = req.draining() || worker.drain_requested;
  using store::WorkerState;
  WorkerState state = worker.state == WorkerState::kQuarantined ? WorkerState::kQuarantined
                      : draining                                ? WorkerState::kDraining
                      : req.running_size()                      ? WorkerState::kBusy
                                                                : WorkerState::kIdle;
  // The heartbeat time and the leases are written a few times per lease, not on every
  // beat: with a thousand workers those writes were most of the store's work. A change
  // of state is written at once.
  bool due = beat_writes_.Due(who.worker_id, now, BeatWriteEveryMs(ctx_->tunables));
  if (req.has_capabilities()) {
    // Sent only when they changed (a GPU appeared or failed, a toolkit was installed, the
    // environment cache grew): placement, revalidation and `workers` read the stored copy.
    farm::v1::Capabilities caps = req.capabilities();
    sched::SettleProvisioning(ctx_->serves_toolkits, &caps);
    worker.capabilities = caps.SerializeAsString();
    worker.state = state;
    worker.last_heartbeat_ms = now;
    FARM_RETURN_IF_ERROR(ctx_->store->UpsertWorker(worker));
    log::Info("worker " + who.worker_id + " reported new capabilities: " +
              std::to_string(req.capabilities().gpus_size()) + " GPU(s)");
  } else if (due || state != worker.state) {
    FARM_RETURN_IF_ERROR(ctx_->store->TouchWorker(who.worker_id, now, state));
  }
  resp->set_drain(worker.drain_requested);
  resp->set_upstream_url(ctx_->upstream_url);
  FARM_ASSIGN_OR_RETURN(auto cancelled,
                        due ? ctx_->store->RenewLeases(who.worker_id, now, ctx_->tunables.lease_ms)
                            : ctx_->store->CancelRequestedJobs(who.worker_id));
  for (const auto& job : cancelled) {
    auto* c = resp->add_cancel();
    c->set_job_id(job.id);
    c->set_attempt(job.attempt);
  }
  // Attempts the worker still runs but no longer holds (requeued while it was away).
  for (const auto& running : req.running()) {
    RecordLiveFigures(*ctx_, progress_, who.worker_id, running);
    FARM_ASSIGN_OR_RETURN(
        bool reattached, ctx_->store->ReattachAttempt(running.job_id(), running.attempt(),
                                                      who.worker_id, now, ctx_->tunables.lease_ms));
    if (reattached) {
      log::Info("job " + std::to_string(running.job_id()) + " attempt " +
                std::to_string(running.attempt()) + " re-attached to its worker " + who.worker_id);
      continue;
    }
    auto job = ctx_->store->GetJob(running.job_id());
    if (job.ok() && (job->attempt != running.attempt() || job->worker_id != who.worker_id ||
                     job->state != store::kJobRunning)) {
      *resp->add_cancel() = running;
    }
  }
  return Status::Ok();
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

std::string CacheNamespaceId(const std::string& principal, const std::string& recipe_name) {
  Sha256 h;
  for (const std::string* part : {&principal, &recipe_name}) {
    h.Update(std::to_string(part->size()) + ":");
    h.Update(*part);
  }
  return h.HexDigest().substr(0, 32);
}

Result<LeasedBuild> RecipeCache::Get(const ServiceContext& ctx, int64_t build_id) {
  {
    std::lock_guard lock(mu_);
    auto it = builds_.find(build_id);
    if (it != builds_.end()) return it->second;
  }
  FARM_ASSIGN_OR_RETURN(auto build, ctx.store->GetBuild(build_id));
  LeasedBuild leased{ParseBlob<farm::v1::Recipe>(build.recipe), ""};
  leased.cache_namespace = CacheNamespaceId(build.submitted_by, leased.recipe.name());
  std::lock_guard lock(mu_);
  if (builds_.size() >= kMaxBuilds) builds_.clear();
  builds_[build_id] = leased;
  return leased;
}

WorkerService::WorkerService(ServiceContext* ctx)
    : ctx_(ctx),
      dispatcher_(std::make_unique<sched::Dispatcher>(
          sched::FleetSource{ctx->store, ctx->clock, ctx->fleet_cache.get()},
          ctx->tunables.lease_ms, &peers_)) {}

WorkerService::~WorkerService() = default;

void WorkerService::StopDispatch() {
  dispatcher_->Stop();
  completions_.Stop();  // the queued completions are answered first
}

// Whether the worker may take a job now: not draining or quarantined, below its
// concurrency limit. Returns its poll (without deadline and callback) when it may.
Result<std::optional<sched::Dispatcher::Waiter>> WorkerService::MayTakeJob(const Principal& who) {
  std::optional<sched::Dispatcher::Waiter> out;
  FARM_RETURN_IF_ERROR(ctx_->store->Together([&]() -> Status {  // one visit to the store
    FARM_ASSIGN_OR_RETURN(auto worker, ctx_->store->GetWorker(who.worker_id));
    if (worker.drain_requested || worker.state == store::WorkerState::kDraining ||
        worker.state == store::WorkerState::kQuarantined) {
      return Status::Ok();
    }
    auto caps = ParseBlob<farm::v1::Capabilities>(worker.capabilities);
    // The per-worker concurrency limit: a worker never holds more jobs than it offered.
    FARM_ASSIGN_OR_RETURN(int running, ctx_->store->CountRunningJobs(who.worker_id));
    if (caps.max_concurrent_jobs() > 0 && running >= caps.max_concurrent_jobs()) {
      return Status::Ok();
    }
    sched::Dispatcher::Waiter waiter;
    FARM_ASSIGN_OR_RETURN(waiter.held_gb, HeldValidationGb(*ctx_->store, who.worker_id, caps));
    waiter.worker_id = who.worker_id;
    waiter.worker_name = worker.name;
    waiter.caps = std::move(caps);
    out = std::move(waiter);
    return Status::Ok();
  }));
  return out;
}

grpc::ServerUnaryReactor* WorkerService::AcquireJob(grpc::CallbackServerContext* call,
                                                    const farm::v1::AcquireJobRequest* req,
                                                    farm::v1::AcquireJobResponse* resp) {
  auto* reactor = new AcquireReactor(dispatcher_.get());
  // Everything but the wait happens here; nothing throws out of a gRPC callback.
  auto checked = Guarded("AcquireJob", [&]() -> Result<std::optional<sched::Dispatcher::Waiter>> {
    FARM_ASSIGN_OR_RETURN(Principal who, AuthorizePeer(*ctx_, *call, Need::kWorker));
    FARM_RETURN_IF_ERROR(CheckSelf(who, req->worker_id()));
    return MayTakeJob(who);
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
    FARM_ASSIGN_OR_RETURN(*resp->mutable_job(), MakeAssignment(*ctx_, recipes_, job));
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
        FARM_RETURN_IF_ERROR(CheckHolds(*ctx_, who, chunk.job_id(), chunk.attempt()));
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
    progress_.Forget(done.req->job_id());
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
        c->state =
            Guarded("CompleteJob", [&] { return Complete(c->who, c->req, &c->release_error); });
      }
      return Status::Ok();
    });
  });
  for (auto& c : batch) {
    if (!committed.ok()) c->state = committed;  // none of the batch was kept
    Answer(*c);
  }
}

Result<int> WorkerService::Complete(const Principal& who, const farm::v1::CompleteJobRequest* req,
                                    Status* release_error) {
  FARM_RETURN_IF_ERROR(CheckHolds(*ctx_, who, req->job_id(), req->attempt()));
  FARM_ASSIGN_OR_RETURN(auto job, ctx_->store->GetJob(req->job_id()));
  FARM_ASSIGN_OR_RETURN(LeasedBuild build, recipes_.Get(*ctx_, job.build_id));
  const farm::v1::Recipe& recipe = build.recipe;
  int64_t now = ctx_->clock->NowUnixMs();
  store::CompletionReport report{
      .job_id = req->job_id(),
      .attempt = req->attempt(),
      .worker_id = who.worker_id,
      .cause = static_cast<int>(req->cause()),
      .exit_code = req->exit_code(),
      .detail = req->detail(),
      .peak_rss_bytes = req->peak_rss_bytes(),
      .max_attempts = job.max_attempts,
      .retry_build_failures = recipe.retry().retry_build_failures(),
      .retry_not_before_ms = now + 1000LL * recipe.retry().backoff_seconds(),
      .validation = req->has_validation() ? req->validation().SerializeAsString() : "",
      .validation_state = req->validation().state(),
      .cache_hits = req->has_compile_cache() ? req->compile_cache().hits() : -1,
      .cache_misses = req->has_compile_cache() ? req->compile_cache().misses() : -1};
  if (report.cause == store::kCauseCompleted && req->exit_code() == 0 &&
      job.kind == store::kJobBuild) {
    FARM_ASSIGN_OR_RETURN(auto artifacts, ctx_->store->ListArtifacts(req->job_id()));
    bool any = false;
    for (const auto& a : artifacts) any |= a.attempt == req->attempt();
    if (!any) {
      report.cause = store::kCauseBuildFailed;
      report.detail = "the attempt reported success but uploaded no wheel";
    }
  }
  if (report.cause == store::kCauseCompleted && report.exit_code == 0 &&
      job.kind == store::kJobBuild) {
    // A stable-ABI build's validations in its other torches, queued with its success.
    FARM_ASSIGN_OR_RETURN(
        report.on_success,
        sched::FanoutValidations(*ctx_->store, job, req->attempt(), now, job.max_attempts));
  } else if (job.kind == store::kJobValidate) {
    FARM_ASSIGN_OR_RETURN(store::JobRow target, ctx_->store->GetJob(job.target_job_id));
    if (sched::IsFanoutValidation(job, target)) {
      sched::FanoutOutcome(req->validation(), &report.cause, &report.detail);
    }
  }
  sched::RetryPlan retry = sched::PlanRetry(report.cause, req->attempt(), job.max_attempts,
                                            recipe.retry().backoff_seconds(), now);
  report.max_attempts = retry.max_attempts;
  report.retry_not_before_ms = retry.not_before_ms;
  FARM_ASSIGN_OR_RETURN(int state, ctx_->store->CompleteAttempt(report, now));
  if (ctx_->attestor != nullptr && req->has_validation()) {
    // The report is stored; a wheel without its signed validation fails
    // --require-validated-arch, so a signing failure is only logged.
    Status attested =
        ctx_->attestor->AttestValidation(job, req->attempt(), req->validation(), who.worker_id);
    if (!attested.ok()) {
      log::Error("signing the validation of job " + std::to_string(job.id) + ": " +
                 attested.ToString());
    }
  }
  if (store::IsTerminal(state)) {  // jobs waiting for this one's wheel go on at once
    auto released = ctx_->store->ResolveHeldJobs(now, builds::KeyWithInputs);
    if (!released.ok()) *release_error = released.status();
  }
  return state;
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
