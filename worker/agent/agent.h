// Agent: the farm-worker main loop. It registers with farmd (keeping its identity in
// the state directory), heartbeats with the jobs it runs, long-polls for jobs and runs up
// to max_jobs of them on their own threads, re-probes capabilities every 5 minutes, and
// on Stop() cancels what runs, reports it and returns. farmd being unreachable is
// waited out with bounded backoff; a farmd that no longer knows the worker gets it
// registered again.
//
// Run() is called once, from one thread; Stop() may be called from any thread.
#ifndef FARM_WORKER_AGENT_AGENT_H_
#define FARM_WORKER_AGENT_AGENT_H_

#include <atomic>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"
#include "worker/agent/state.h"
#include "worker/attempt/job_runner.h"
#include "worker/cache/compile_cache.h"
#include "worker/client/farm_client.h"
#include "worker/config/config.h"
#include "worker/exec/executor.h"
#include "worker/job/environments.h"
#include "worker/probe/probe.h"

namespace farm::agent {

struct AgentDeps {
  FarmClient* client = nullptr;
  CapabilityProbe* probe = nullptr;
  ProcessRunner* runner = nullptr;
  Executor* executor = nullptr;
  const Clock* clock = nullptr;
  WheelHook wheel_hook;  // may be empty
};

struct AgentTimings {
  int32_t acquire_wait_ms = 5000;
  int64_t probe_interval_ms = 5 * 60 * 1000;
  int64_t default_heartbeat_ms = 5000;
};

class Agent {
 public:
  Agent(WorkerConfig config, std::string enroll_token, AgentDeps deps, AgentTimings timings = {});
  ~Agent();

  // Runs until Stop(). On a clean stop returns OK; returns an error only when the worker
  // cannot start (enrollment refused, state directory unusable).
  Status Run();

  // Asks Run() to stop: no new jobs, running ones are cancelled and reported.
  void Stop();

 private:
  struct RunningJob {
    farm::v1::JobAssignment job;
    std::shared_ptr<JobControl> control;
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };

  Status RegisterUntilDone();
  Status RegisterOnce();
  void Reregister(const Status& why);
  void HeartbeatLoop();
  void SendHeartbeat(bool draining);
  void ProbeLoop();
  void AcquireLoop();
  void StartJob(const farm::v1::AcquireJobResponse& resp);
  size_t ReapFinished();
  void CancelAndJoinAll();
  bool SleepUnlessStopped(int64_t ms);
  bool IsAuthError(const Status& s) const;
  void StartCompileCache();
  // Capabilities.provisioning from the environments (nothing when the worker provisions
  // none); LearnFarmUpstream takes farmd's pull-through address from its reply, and the
  // token the worker sends there.
  void AddProvisioning(farm::v1::Capabilities* caps);
  void LearnFarmUpstream(const std::string& upstream_url, const std::string& worker_token);

  const WorkerConfig config_;
  const std::string enroll_token_;
  AgentDeps deps_;
  const AgentTimings timings_;
  const EnvMap worker_env_;
  std::unique_ptr<CompileCache> compile_cache_;  // made in Run() before any job starts
  std::unique_ptr<Environments> environments_;   // null unless --provision

  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  WorkerIdentity identity_;      // guarded by mu_
  farm::v1::Capabilities caps_;  // guarded by mu_
  bool caps_changed_ = false;    // guarded by mu_
  int64_t heartbeat_ms_ = 5000;  // guarded by mu_
  // Heartbeats failed in a row: the first failure of an outage is a warning, the rest are
  // debug lines, and the one that gets through again says how long farmd was unreachable.
  std::atomic<int> heartbeat_failures_{0};
  std::list<RunningJob> jobs_;  // guarded by mu_
  std::mutex register_mu_;      // one registration at a time
};

}  // namespace farm::agent

#endif  // FARM_WORKER_AGENT_AGENT_H_
