#include "worker/agent/agent.h"

#include <chrono>

#include "common/fs.h"
#include "common/log.h"
#include "worker/client/backoff.h"

namespace farm::agent {
namespace {

std::string JobKey(int64_t job, int32_t attempt) {
  return "job " + std::to_string(job) + " attempt " + std::to_string(attempt);
}

}  // namespace

Agent::Agent(WorkerConfig config, std::string enroll_token, AgentDeps deps, AgentTimings timings)
    : config_(std::move(config)),
      enroll_token_(std::move(enroll_token)),
      deps_(std::move(deps)),
      timings_(timings),
      worker_env_(BaseEnv(CurrentEnv())) {
  heartbeat_ms_ = timings_.default_heartbeat_ms;
  if (config_.provision.enabled) {
    environments_ = std::make_unique<Environments>(config_.provision, deps_.runner, deps_.clock);
  }
}

void Agent::AddProvisioning(farm::v1::Capabilities* caps) {
  if (environments_) *caps->mutable_provisioning() = environments_->Advertise();
}

void Agent::LearnFarmUpstream(const std::string& upstream_url, const std::string& worker_token) {
  if (environments_) environments_->SetFarmUpstream(upstream_url, worker_token);
}

Agent::~Agent() {
  Stop();
  CancelAndJoinAll();
}

void Agent::Stop() {
  stopping_ = true;
  deps_.client->CancelWaits();
  cv_.notify_all();
}

bool Agent::SleepUnlessStopped(int64_t ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
  return !stopping_;
}

bool Agent::IsAuthError(const Status& s) const {
  return s.code() == StatusCode::kUnauthenticated || s.code() == StatusCode::kNotFound;
}

Status Agent::RegisterOnce() {
  std::lock_guard reg(register_mu_);
  WorkerIdentity id;
  farm::v1::RegisterRequest req;
  {
    std::lock_guard lock(mu_);
    id = identity_;
    *req.mutable_capabilities() = caps_;
  }
  req.set_name(config_.name);
  if (!id.empty()) {
    req.set_worker_id(id.worker_id);
    auto r = deps_.client->Register(req, id.worker_token);
    if (r.ok()) {
      deps_.client->SetToken(id.worker_token);
      LearnFarmUpstream(r->upstream_url(), id.worker_token);
      std::lock_guard lock(mu_);
      if (r->heartbeat_interval_ms() > 0) heartbeat_ms_ = r->heartbeat_interval_ms();
      log::Info("registered as " + r->worker_id());
      return Status::Ok();
    }
    if (!IsAuthError(r.status()) && r.status().code() != StatusCode::kPermissionDenied) {
      return r.status();
    }
    log::Warn("farmd does not accept worker " + id.worker_id + " (" + r.status().message() +
              "); enrolling again");
    req.clear_worker_id();
  }
  auto r = deps_.client->Register(req, enroll_token_);
  if (!r.ok()) return r.status();
  log::RegisterSecret(r->worker_token());
  WorkerIdentity fresh{r->worker_id(), r->worker_token()};
  if (Status saved = SaveIdentity(config_.state_dir, fresh); !saved.ok()) {
    return Status::FailedPrecondition("saving worker identity: " + saved.message());
  }
  deps_.client->SetToken(fresh.worker_token);
  LearnFarmUpstream(r->upstream_url(), fresh.worker_token);
  {
    std::lock_guard lock(mu_);
    identity_ = fresh;
    if (r->heartbeat_interval_ms() > 0) heartbeat_ms_ = r->heartbeat_interval_ms();
  }
  log::Info("registered as " + fresh.worker_id);
  return Status::Ok();
}

Status Agent::RegisterUntilDone() {
  Backoff backoff;
  for (int i = 0; !stopping_; ++i) {
    Status s = RegisterOnce();
    if (s.ok()) return s;
    // A refused enrollment token will not get better by waiting.
    if (s.code() == StatusCode::kUnauthenticated || s.code() == StatusCode::kPermissionDenied ||
        s.code() == StatusCode::kFailedPrecondition) {
      return s.WithContext("registering with farmd");
    }
    int64_t delay = backoff.NextDelayMs();
    if (i % 10 == 0) log::Warn("cannot register yet (" + s.ToString() + "); retrying");
    deps_.client->Reconnect();
    SleepUnlessStopped(delay);
  }
  return Status::Ok();
}

void Agent::Reregister(const Status& why) {
  log::Warn("farmd rejected the worker token (" + why.message() + "); registering again");
  Status s = RegisterOnce();
  if (!s.ok()) log::Warn("registering again failed: " + s.ToString());
}

void Agent::SendHeartbeat(bool draining) {
  farm::v1::HeartbeatRequest req;
  std::map<std::pair<int64_t, int32_t>, std::shared_ptr<JobControl>> controls;
  {
    std::lock_guard lock(mu_);
    req.set_worker_id(identity_.worker_id);
    for (const auto& j : jobs_) {
      if (j.done->load() || j.control->reported) continue;
      auto* r = req.add_running();
      r->set_job_id(j.job.job_id());
      r->set_attempt(j.job.attempt());
      r->set_log_seq(j.control->log_seq.load());
      controls[{j.job.job_id(), j.job.attempt()}] = j.control;
    }
    if (caps_changed_) *req.mutable_capabilities() = caps_;
  }
  // Reading /proc takes a moment: outside the lock, so starting a job never waits on it.
  for (auto& r : *req.mutable_running()) {
    JobControl& control = *controls[{r.job_id(), r.attempt()}];
    control.progress.Sample();
    ProgressSnapshot progress = control.progress.Snapshot();
    r.set_units_done(progress.units_done);
    r.set_units_total(progress.units_total);
    r.set_peak_rss_bytes(progress.peak_rss_bytes);
  }
  req.set_draining(draining);
  auto resp = deps_.client->Heartbeat(req);
  if (!resp.ok()) {
    if (IsAuthError(resp.status()))
      Reregister(resp.status());
    else if (resp.status().code() == StatusCode::kUnavailable)
      deps_.client->Reconnect();
    int failures = ++heartbeat_failures_;
    if (failures == 1) {
      log::Warn("heartbeat failed (" + resp.status().ToString() + "); retrying");
    } else {
      log::Debug("heartbeat: " + resp.status().ToString());
    }
    return;
  }
  if (int failed = heartbeat_failures_.exchange(0); failed > 0) {
    log::Info("heartbeat reached farmd again after " + std::to_string(failed) + " failed");
  }
  if (environments_ && !resp->upstream_url().empty()) {
    std::string token;
    {
      std::lock_guard lock(mu_);
      token = identity_.worker_token;
    }
    LearnFarmUpstream(resp->upstream_url(), token);
  }
  if (req.has_capabilities()) {
    std::lock_guard lock(mu_);
    caps_changed_ = false;
  }
  for (const auto& c : resp->cancel()) {
    auto it = controls.find({c.job_id(), c.attempt()});
    // A job whose completion report farmd accepted while the heartbeat was in flight is no
    // longer running there: "cancelled" would only mislead the log.
    if (it == controls.end() || it->second->reported) continue;
    log::Info("farmd cancelled " + JobKey(c.job_id(), c.attempt()));
    it->second->Stop(farm::v1::CAUSE_CANCELLED,
                     "stopped at farmd's request: the build was cancelled");
  }
}

void Agent::HeartbeatLoop() {
  while (!stopping_) {
    int64_t interval;
    {
      std::lock_guard lock(mu_);
      interval = heartbeat_ms_;
    }
    if (!SleepUnlessStopped(interval)) break;
    SendHeartbeat(false);
  }
}

void Agent::ProbeLoop() {
  while (SleepUnlessStopped(timings_.probe_interval_ms)) {
    farm::v1::Capabilities fresh = deps_.probe->Probe();
    AddProvisioning(&fresh);
    std::lock_guard lock(mu_);
    // Free disk and the host's own numbers drift; only report real changes.
    farm::v1::Capabilities a = fresh, b = caps_;
    a.clear_free_disk_bytes();
    b.clear_free_disk_bytes();
    if (a.SerializeAsString() != b.SerializeAsString()) {
      log::Info("capabilities changed; reporting them");
      if (fresh.gpu_driver_error() != caps_.gpu_driver_error() &&
          !fresh.gpu_driver_error().empty()) {
        log::Error(fresh.gpu_driver_error());
      }
      caps_changed_ = true;
    }
    caps_ = fresh;
  }
}

void Agent::StartJob(const farm::v1::AcquireJobResponse& resp) {
  const auto& job = resp.job();
  log::Info("took " + JobKey(job.job_id(), job.attempt()) + " (" + job.recipe().name() +
            ", python " + job.cell().python() + ", cuda " + job.cell().cuda() + ", arch " +
            job.cell().arch_list() + ")");
  JobSettings settings;
  {
    std::lock_guard lock(mu_);
    settings.caps = caps_;
    settings.secrets = {enroll_token_, identity_.worker_token};
    settings.worker_id = identity_.worker_id;
  }
  settings.find_links = config_.find_links;
  settings.work_dir = config_.work_dir;
  settings.keep_workspace = config_.keep_workspaces;
  settings.worker_env = worker_env_;
  settings.shutting_down = &stopping_;
  settings.compile_cache = compile_cache_.get();
  settings.log_buffer_bytes = config_.log_buffer_bytes;
  // Only the sandbox switches users; other executors run commands as they always do.
  if (deps_.executor->Kind() == ExecutorKind::kSandbox) settings.build_user = config_.build_user;
  settings.git = config_.git;
  settings.validation_held_gb = [this](int64_t job_id) {
    std::lock_guard lock(mu_);
    double held = 0;
    for (const RunningJob& j : jobs_) {
      if (!j.done->load() && j.job.job_id() != job_id) held += ValidationReserveGb(j.job, caps_);
    }
    return held;
  };
  JobDeps jd{deps_.client, deps_.runner, deps_.executor,
             deps_.probe,  deps_.clock,  deps_.wheel_hook};
  jd.environments = environments_.get();
  RunningJob entry{
      job, std::make_shared<JobControl>(), std::make_shared<std::atomic<bool>>(false), {}};
  auto control = entry.control;
  auto done = entry.done;
  entry.thread = std::thread([this, jd, settings, job, control, done]() mutable {
    try {
      JobRunner(std::move(jd), std::move(settings), job, control).Run();
    } catch (const std::exception& e) {
      log::Error(JobKey(job.job_id(), job.attempt()) + " crashed: " + e.what());
    } catch (...) {
      log::Error(JobKey(job.job_id(), job.attempt()) + " crashed");
    }
    done->store(true);
    cv_.notify_all();
  });
  std::lock_guard lock(mu_);
  jobs_.push_back(std::move(entry));
}

size_t Agent::ReapFinished() {
  std::list<RunningJob> finished;
  size_t running = 0;
  {
    std::lock_guard lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->done->load()) {
        finished.splice(finished.end(), jobs_, it++);
      } else {
        ++running;
        ++it;
      }
    }
  }
  for (auto& j : finished) j.thread.join();
  return running;
}

void Agent::AcquireLoop() {
  Backoff backoff;
  while (!stopping_) {
    if (ReapFinished() >= static_cast<size_t>(config_.max_jobs)) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_.load(); });
      continue;
    }
    farm::v1::AcquireJobRequest req;
    {
      std::lock_guard lock(mu_);
      req.set_worker_id(identity_.worker_id);
    }
    req.set_wait_ms(timings_.acquire_wait_ms);
    auto resp = deps_.client->AcquireJob(req);
    if (stopping_) break;
    if (!resp.ok()) {
      if (IsAuthError(resp.status()))
        Reregister(resp.status());
      else if (resp.status().code() == StatusCode::kUnavailable)
        deps_.client->Reconnect();
      log::Warn("AcquireJob failed: " + resp.status().ToString());
      SleepUnlessStopped(backoff.NextDelayMs());
      continue;
    }
    backoff.Reset();
    if (resp->has_job()) StartJob(*resp);
  }
}

void Agent::CancelAndJoinAll() {
  std::list<RunningJob> all;
  {
    std::lock_guard lock(mu_);
    for (auto& j : jobs_) {
      if (!j.done->load()) j.control->Stop(farm::v1::CAUSE_INFRASTRUCTURE, "worker shutting down");
    }
    all.swap(jobs_);
  }
  for (auto& j : all) {
    if (j.thread.joinable()) j.thread.join();
  }
}

// A cache that cannot be set up leaves builds uncached; it never stops the worker.
void Agent::StartCompileCache() {
  CompileCacheOptions options{config_.ccache, config_.ccache_dir, config_.ccache_max_size,
                              config_.work_dir + "/compile-cache-tools"};
  if (options.cache_dir.empty()) options.cache_dir = config_.work_dir + "/ccache";
  auto cache = CompileCache::Create(options, worker_env_);
  if (!cache.ok()) {
    log::Warn("builds run without a compile cache: " + cache.status().ToString());
    return;
  }
  compile_cache_ = std::move(cache).value();
}

Status Agent::Run() {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(config_.state_dir, 0711));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(config_.work_dir));
  StartCompileCache();
  FARM_ASSIGN_OR_RETURN(WorkerIdentity stored, LoadIdentity(config_.state_dir));
  log::RegisterSecret(enroll_token_);
  log::RegisterSecret(stored.worker_token);
  farm::v1::Capabilities caps = deps_.probe->Probe();
  AddProvisioning(&caps);
  log::Info(caps.hostname() + " " + caps.platform() + ", " + std::to_string(caps.cpu_cores()) +
            " cores, " + std::to_string(caps.ram_bytes() >> 30) + " GiB RAM, " +
            std::to_string(caps.gpus_size()) + " GPU(s), " + std::to_string(caps.toolkits_size()) +
            " CUDA toolkit(s), " + std::to_string(caps.pythons_size()) + " Python(s)" +
            (caps.wsl2() ? ", WSL2" : "") +
            (caps.provisioning().enabled() ? ", provisions environments" : "") +
            (caps.cuda_driver_library().empty() ? "" : ", driver " + caps.cuda_driver_library()));
  if (!caps.gpu_driver_error().empty()) log::Error(caps.gpu_driver_error());
  {
    std::lock_guard lock(mu_);
    identity_ = stored;
    caps_ = caps;
  }
  FARM_RETURN_IF_ERROR(RegisterUntilDone());
  std::thread heartbeat([this] { HeartbeatLoop(); });
  std::thread prober([this] { ProbeLoop(); });
  AcquireLoop();
  log::Info("stopping: cancelling running jobs");
  CancelAndJoinAll();
  SendHeartbeat(true);
  heartbeat.join();
  prober.join();
  log::Info("stopped");
  return Status::Ok();
}

}  // namespace farm::agent
