// sched_bench: measures farmd's scheduler from the outside. It registers N simulated
// workers over the worker gRPC API (each with its own connection, heartbeating at the
// period farmd hands out), submits builds of a tiny recipe through the client API, and lets
// every worker lease jobs with AcquireJob and complete them at once with CompleteJob
// (CAUSE_COMPLETED, exit 0, no wheel: farmd records such a job as FAILED, "uploaded no
// wheel"; the figure of interest is dispatch). It prints lease rate, submit-to-lease
// latency, completion rate, heartbeat latency and the final job states.
//
// Modes: "backlog" submits every job before any worker asks (pure dispatch rate);
// "live" starts the workers polling first, then submits (latency as a user sees it).
// A benchmark, not a test: it asserts nothing about speed. Every wait has a deadline.
// Single process; the Bench object owns all workers and outlives every callback.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/flags.h"
#include "common/fs.h"
#include "common/net/grpc_runtime.h"
#include "farm/v1/client.grpc.pb.h"
#include "farm/v1/worker.grpc.pb.h"
#include "tests/bench/sched_bench_workload.h"

namespace farm::bench {
namespace {

constexpr int64_t kCallTimeoutMs = 30000;
// SubmitBuild answers with every job and its placement against every worker: slow with
// many workers, so it gets longer than the worker calls.
constexpr int64_t kSubmitTimeoutMs = 120000;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Options {
  std::string server;
  std::string enroll_token;
  std::string submit_token;
  int workers = 100;
  int jobs = 5000;
  int cells_per_build = 50;
  std::string mode = "live";
  int submit_interval_ms = 0;
  int acquire_wait_ms = 5000;  // what farm-worker asks for
  int time_limit_s = 300;
  std::string label;
};

void Prepare(grpc::ClientContext* ctx, const std::string& token, int64_t timeout_ms) {
  ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

// One simulated worker. `mu` guards the fields below it.
struct SimWorker {
  int index = 0;
  std::string id;
  std::string token;
  std::unique_ptr<farm::v1::WorkerService::Stub> stub;
  int heartbeat_ms = 2000;
  int64_t next_heartbeat_us = 0;
  std::atomic<bool> heartbeat_in_flight{false};
  std::mutex mu;
  int64_t running_job = 0;
  int running_attempt = 0;
  grpc::ClientContext* acquire_ctx = nullptr;  // the long poll in flight, for TryCancel
};

struct AcquireCall {
  grpc::ClientContext ctx;
  farm::v1::AcquireJobRequest req;
  farm::v1::AcquireJobResponse resp;
};

struct CompleteCall {
  grpc::ClientContext ctx;
  farm::v1::CompleteJobRequest req;
  farm::v1::CompleteJobResponse resp;
};

struct HeartbeatCall {
  grpc::ClientContext ctx;
  farm::v1::HeartbeatRequest req;
  farm::v1::HeartbeatResponse resp;
  int64_t start_us = 0;
};

// Samples and counters shared by the callbacks; `mu` guards the vectors and the map.
struct Stats {
  std::mutex mu;
  std::map<int64_t, int64_t> lease_us;  // job id -> when AcquireJob returned it
  std::vector<int64_t> complete_us;     // when each CompleteJob returned
  std::vector<int64_t> heartbeat_latency_us;
  std::map<std::string, int> end_states;  // JobState name -> count
  std::map<int64_t, int64_t> submit_us;   // job id -> when its SubmitBuild was sent
  std::vector<int64_t> submit_call_us;    // duration of each SubmitBuild
  std::atomic<int64_t> empty_polls{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> completed{0};
  std::string first_error;
};

class Bench {
 public:
  explicit Bench(Options options) : options_(std::move(options)) {}

  // On success the run's figures were printed; an error says which phase failed.
  Status Run();

 private:
  Status RegisterAll();
  Status RegisterOne(SimWorker* w);
  Status SubmitAll();
  void StartAcquire(SimWorker* w);
  void OnAcquired(SimWorker* w, const std::shared_ptr<AcquireCall>& call, const grpc::Status& s);
  void StartComplete(SimWorker* w, const farm::v1::JobAssignment& job);
  void HeartbeatLoop();
  void SendHeartbeat(SimWorker* w);
  void RecordError(const std::string& what, const grpc::Status& s);
  void StopAndDrain();
  void Report(int64_t t0_us, int64_t register_us);

  Options options_;
  std::vector<std::unique_ptr<SimWorker>> workers_;
  Stats stats_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> in_flight_{0};
  std::mutex retry_mu_;
  std::vector<SimWorker*> retry_;  // workers whose last call failed, restarted by the timer
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& server) {
  grpc::ChannelArguments args;
  // A connection per worker, as real workers have, instead of one shared subchannel.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
}

Status Bench::RegisterOne(SimWorker* w) {
  w->stub = farm::v1::WorkerService::NewStub(NewChannel(options_.server));
  farm::v1::RegisterRequest req;
  req.set_name("bench-" + std::to_string(w->index));
  *req.mutable_capabilities() = MakeCapabilities(w->index);
  farm::v1::RegisterResponse resp;
  grpc::ClientContext ctx;
  Prepare(&ctx, options_.enroll_token, kCallTimeoutMs);
  grpc::Status s = w->stub->Register(&ctx, req, &resp);
  if (!s.ok()) return Status::Unavailable("Register: " + s.error_message());
  w->id = resp.worker_id();
  w->token = resp.worker_token();
  w->heartbeat_ms = std::max(100, resp.heartbeat_interval_ms());
  return Status::Ok();
}

// Registers every worker from a few threads; each call has its own deadline.
Status Bench::RegisterAll() {
  for (int i = 0; i < options_.workers; ++i) {
    workers_.push_back(std::make_unique<SimWorker>());
    workers_.back()->index = i;
  }
  std::atomic<int> next{0};
  std::mutex mu;
  Status failed = Status::Ok();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < options_.workers; i = next++) {
        Status s = RegisterOne(workers_[i].get());
        std::lock_guard lock(mu);
        if (!s.ok() && failed.ok()) failed = s;
      }
    });
  }
  for (auto& t : threads) t.join();
  int64_t now = NowUs();
  for (auto& w : workers_) {
    // Spread the heartbeats over one period, as independently started workers would be.
    w->next_heartbeat_us = now + int64_t{1000} * w->heartbeat_ms * w->index / options_.workers;
  }
  return failed;
}

void Bench::RecordError(const std::string& what, const grpc::Status& s) {
  if (stopping_ && s.error_code() == grpc::StatusCode::CANCELLED) return;
  stats_.errors++;
  std::lock_guard lock(stats_.mu);
  if (stats_.first_error.empty()) stats_.first_error = what + ": " + s.error_message();
}

void Bench::StartAcquire(SimWorker* w) {
  if (stopping_) return;
  auto call = std::make_shared<AcquireCall>();
  call->req.set_worker_id(w->id);
  call->req.set_wait_ms(options_.acquire_wait_ms);
  Prepare(&call->ctx, w->token, options_.acquire_wait_ms + kCallTimeoutMs);
  {
    std::lock_guard lock(w->mu);
    w->acquire_ctx = &call->ctx;
  }
  in_flight_++;
  w->stub->async()->AcquireJob(&call->ctx, &call->req, &call->resp,
                               [this, w, call](grpc::Status s) {
                                 OnAcquired(w, call, s);
                                 in_flight_--;
                               });
}

void Bench::OnAcquired(SimWorker* w, const std::shared_ptr<AcquireCall>& call,
                       const grpc::Status& s) {
  int64_t now = NowUs();
  {
    std::lock_guard lock(w->mu);
    w->acquire_ctx = nullptr;
  }
  if (!s.ok()) {
    RecordError("AcquireJob", s);
    std::lock_guard lock(retry_mu_);
    if (!stopping_) retry_.push_back(w);
    return;
  }
  if (!call->resp.has_job()) {
    stats_.empty_polls++;
    StartAcquire(w);
    return;
  }
  const farm::v1::JobAssignment& job = call->resp.job();
  {
    std::lock_guard lock(stats_.mu);
    stats_.lease_us.emplace(job.job_id(), now);
  }
  {
    std::lock_guard lock(w->mu);
    w->running_job = job.job_id();
    w->running_attempt = job.attempt();
  }
  StartComplete(w, job);
}

void Bench::StartComplete(SimWorker* w, const farm::v1::JobAssignment& job) {
  auto call = std::make_shared<CompleteCall>();
  call->req.set_job_id(job.job_id());
  call->req.set_attempt(job.attempt());
  call->req.set_exit_code(0);
  call->req.set_cause(farm::v1::CAUSE_COMPLETED);
  Prepare(&call->ctx, w->token, kCallTimeoutMs);
  in_flight_++;
  auto* stub = w->stub->async();
  stub->CompleteJob(&call->ctx, &call->req, &call->resp, [this, w, call](grpc::Status s) {
    int64_t now = NowUs();
    {
      std::lock_guard lock(w->mu);
      w->running_job = 0;
    }
    if (s.ok()) {
      stats_.completed++;
      std::lock_guard lock(stats_.mu);
      stats_.complete_us.push_back(now);
      stats_.end_states[farm::v1::JobState_Name(call->resp.state())]++;
    } else {
      RecordError("CompleteJob", s);
    }
    StartAcquire(w);
    in_flight_--;
  });
}

void Bench::SendHeartbeat(SimWorker* w) {
  if (w->heartbeat_in_flight.exchange(true)) return;  // the previous one is still out
  auto call = std::make_shared<HeartbeatCall>();
  call->req.set_worker_id(w->id);
  {
    std::lock_guard lock(w->mu);
    if (w->running_job) {
      auto* r = call->req.add_running();
      r->set_job_id(w->running_job);
      r->set_attempt(w->running_attempt);
    }
  }
  Prepare(&call->ctx, w->token, kCallTimeoutMs);
  call->start_us = NowUs();
  in_flight_++;
  w->stub->async()->Heartbeat(&call->ctx, &call->req, &call->resp, [this, w, call](grpc::Status s) {
    int64_t took = NowUs() - call->start_us;
    if (s.ok()) {
      std::lock_guard lock(stats_.mu);
      stats_.heartbeat_latency_us.push_back(took);
    } else {
      RecordError("Heartbeat", s);
    }
    w->heartbeat_in_flight = false;
    in_flight_--;
  });
}

// Sends due heartbeats and restarts workers whose call failed, every 10 ms until stop.
void Bench::HeartbeatLoop() {
  int64_t last_retry = NowUs();
  while (!stopping_) {
    int64_t now = NowUs();
    for (auto& w : workers_) {
      if (now < w->next_heartbeat_us) continue;
      w->next_heartbeat_us += int64_t{1000} * w->heartbeat_ms;
      SendHeartbeat(w.get());
    }
    if (now - last_retry > 200000) {
      std::vector<SimWorker*> again;
      {
        std::lock_guard lock(retry_mu_);
        again.swap(retry_);
      }
      for (SimWorker* w : again) StartAcquire(w);
      last_retry = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status Bench::SubmitAll() {
  auto channel = NewChannel(options_.server);
  auto stub = farm::v1::FarmService::NewStub(channel);
  std::string yaml = RecipeYaml(options_.cells_per_build);
  int builds = (options_.jobs + options_.cells_per_build - 1) / options_.cells_per_build;
  int64_t deadline = NowUs() + int64_t{1000000} * options_.time_limit_s;
  int failures = 0;
  for (int b = 0; b < builds && NowUs() < deadline; ++b) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(yaml);
    req.set_recipe_path("sched-bench/recipe.yaml");
    // Forced: no job is merged with an identical one in flight or answered by a stored one.
    req.set_force(true);
    farm::v1::SubmitBuildResponse resp;
    grpc::ClientContext ctx;
    Prepare(&ctx, options_.submit_token, kSubmitTimeoutMs);
    int64_t sent = NowUs();
    grpc::Status s = stub->SubmitBuild(&ctx, req, &resp);
    int64_t took = NowUs() - sent;
    if (!s.ok()) {
      // A slow farmd is a result, not a reason to stop: count it and go on (bounded).
      RecordError("SubmitBuild", s);
      if (++failures >= 10) return Status::Unavailable("SubmitBuild: " + s.error_message());
      continue;
    }
    {
      std::lock_guard lock(stats_.mu);
      for (const auto& job : resp.build().jobs()) stats_.submit_us[job.id()] = sent;
      stats_.submit_call_us.push_back(took);
    }
    if (options_.submit_interval_ms > 0) {
      std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
          std::chrono::microseconds(sent + int64_t{1000} * options_.submit_interval_ms)));
    }
  }
  return Status::Ok();
}

// Ends every long poll and waits (bounded) until no callback can still run.
void Bench::StopAndDrain() {
  stopping_ = true;
  for (auto& w : workers_) {
    std::lock_guard lock(w->mu);
    if (w->acquire_ctx) w->acquire_ctx->TryCancel();
  }
  int64_t deadline = NowUs() + 60000000;
  while (in_flight_ > 0 && NowUs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status Bench::Run() {
  if (RecipeYaml(options_.cells_per_build).empty()) {
    return Status::InvalidArgument("--cells-per-build must be p*c*a, p<=5, c<=2, a<=10");
  }
  int64_t reg_start = NowUs();
  FARM_RETURN_IF_ERROR(RegisterAll());
  int64_t register_us = NowUs() - reg_start;
  std::thread heartbeats([this] { HeartbeatLoop(); });
  bool live = options_.mode == "live";
  Status submitted = Status::Ok();
  int64_t t0 = NowUs();
  if (!live) submitted = SubmitAll();
  if (submitted.ok()) {
    if (live) std::this_thread::sleep_for(std::chrono::seconds(1));  // let the polls settle
    if (!live) t0 = NowUs();
    for (auto& w : workers_) StartAcquire(w.get());
    if (live) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      t0 = NowUs();
      submitted = SubmitAll();
    }
  }
  int64_t deadline = t0 + int64_t{1000000} * options_.time_limit_s;
  int64_t want = 0;
  {
    std::lock_guard lock(stats_.mu);
    want = static_cast<int64_t>(stats_.submit_us.size());
  }
  while (submitted.ok() && stats_.completed < want && NowUs() < deadline && stats_.errors < 1000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  StopAndDrain();
  heartbeats.join();
  if (in_flight_ > 0) {
    std::cerr << "calls still in flight after 60 s; exiting without waiting\n";
    std::fflush(stdout);
    std::quick_exit(3);
  }
  FARM_RETURN_IF_ERROR(submitted);
  Report(t0, register_us);
  return Status::Ok();
}

int64_t Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double Ms(int64_t us) { return us / 1000.0; }

void Bench::Report(int64_t t0, int64_t register_us) {
  std::lock_guard lock(stats_.mu);
  std::vector<int64_t> latency;
  int64_t last_lease = t0, first_submit = INT64_MAX;
  for (const auto& [job, at] : stats_.lease_us) {
    last_lease = std::max(last_lease, at);
    auto it = stats_.submit_us.find(job);
    if (it != stats_.submit_us.end()) latency.push_back(at - it->second);
  }
  for (const auto& [job, at] : stats_.submit_us) first_submit = std::min(first_submit, at);
  int64_t last_complete = t0;
  for (int64_t at : stats_.complete_us) last_complete = std::max(last_complete, at);
  double lease_s = (last_lease - t0) / 1e6, complete_s = (last_complete - t0) / 1e6;
  int64_t submit_total = 0;
  for (int64_t us : stats_.submit_call_us) submit_total += us;
  std::ostringstream states;
  for (const auto& [name, count] : stats_.end_states) {
    states << (states.tellp() > 0 ? "," : "") << name << ":" << count;
  }
  // The benchmark shares the machine with farmd: its own CPU time says how much it took.
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  double bench_cpu_s = self.ru_utime.tv_sec + self.ru_stime.tv_sec +
                       (self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6;
  std::printf(
      "RESULT label=%s mode=%s workers=%d jobs=%zu leased=%zu completed=%lld "
      "register_s=%.2f submit_jobs_per_s=%.0f submit_call_p50_ms=%.1f submit_call_p99_ms=%.1f "
      "lease_per_s=%.1f complete_per_s=%.1f lat_p50_ms=%.1f lat_p99_ms=%.1f lat_max_ms=%.1f "
      "heartbeats=%zu hb_p50_ms=%.1f hb_p99_ms=%.1f empty_polls=%lld errors=%lld states=%s "
      "bench_cpu_s=%.1f\n",
      options_.label.c_str(), options_.mode.c_str(), options_.workers, stats_.submit_us.size(),
      stats_.lease_us.size(), static_cast<long long>(stats_.completed.load()), register_us / 1e6,
      submit_total ? stats_.submit_us.size() * 1e6 / submit_total : 0.0,
      Ms(Percentile(stats_.submit_call_us, 0.5)), Ms(Percentile(stats_.submit_call_us, 0.99)),
      lease_s > 0 ? stats_.lease_us.size() / lease_s : 0.0,
      complete_s > 0 ? stats_.completed / complete_s : 0.0, Ms(Percentile(latency, 0.5)),
      Ms(Percentile(latency, 0.99)), Ms(Percentile(latency, 1.0)),
      stats_.heartbeat_latency_us.size(), Ms(Percentile(stats_.heartbeat_latency_us, 0.5)),
      Ms(Percentile(stats_.heartbeat_latency_us, 0.99)),
      static_cast<long long>(stats_.empty_polls.load()),
      static_cast<long long>(stats_.errors.load()), states.str().c_str(), bench_cpu_s);
  if (!stats_.first_error.empty()) std::printf("first error: %s\n", stats_.first_error.c_str());
}

Result<std::string> ReadToken(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(std::string text, fs::ReadFile(path));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return Status::InvalidArgument(path + " is empty");
  return text;
}

Result<Options> ParseOptions(int argc, char** argv) {
  Flags flags({
      {"server", "HOST:PORT", "farmd's gRPC address"},
      {"enroll-token-file", "FILE", "enrollment token"},
      {"submit-token-file", "FILE", "submitter token"},
      {"workers", "N", "simulated workers (default 100)"},
      {"jobs", "N", "jobs to submit in all (default 5000)"},
      {"cells-per-build", "N", "jobs per build, p*c*a with p<=5, c<=2, a<=10 (default 50)"},
      {"mode", "MODE", "backlog (submit, then lease) or live (lease while submitting)"},
      {"submit-interval-ms", "MS", "pause between builds in live mode (default 0)"},
      {"acquire-wait-ms", "MS", "AcquireJob long poll (default 5000, as farm-worker)"},
      {"time-limit-s", "S", "give up after this long (default 300)"},
      {"label", "TEXT", "a name for the RESULT line"},
  });
  FARM_RETURN_IF_ERROR(flags.Parse(argc, argv));
  Options o;
  o.server = flags.Get("server");
  if (o.server.empty()) return Status::InvalidArgument("--server is required");
  FARM_ASSIGN_OR_RETURN(o.enroll_token, ReadToken(flags.Get("enroll-token-file")));
  FARM_ASSIGN_OR_RETURN(o.submit_token, ReadToken(flags.Get("submit-token-file")));
  o.mode = flags.Get("mode", "live");
  if (o.mode != "live" && o.mode != "backlog") return Status::InvalidArgument("bad --mode");
  o.label = flags.Get("label", o.mode);
  FARM_ASSIGN_OR_RETURN(int64_t workers, flags.GetInt("workers", 100));
  FARM_ASSIGN_OR_RETURN(int64_t jobs, flags.GetInt("jobs", 5000));
  FARM_ASSIGN_OR_RETURN(int64_t cells, flags.GetInt("cells-per-build", 50));
  FARM_ASSIGN_OR_RETURN(int64_t interval, flags.GetInt("submit-interval-ms", 0));
  FARM_ASSIGN_OR_RETURN(int64_t wait, flags.GetInt("acquire-wait-ms", 5000));
  FARM_ASSIGN_OR_RETURN(int64_t limit, flags.GetInt("time-limit-s", 300));
  if (workers < 1 || workers > 10000 || jobs < 1 || jobs > 1000000 || limit < 1) {
    return Status::InvalidArgument("--workers 1..10000, --jobs 1..1000000, --time-limit-s >= 1");
  }
  o.workers = static_cast<int>(workers);
  o.jobs = static_cast<int>(jobs);
  o.cells_per_build = static_cast<int>(cells);
  o.submit_interval_ms = static_cast<int>(interval);
  o.acquire_wait_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 10000));
  o.time_limit_s = static_cast<int>(limit);
  return o;
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::net::DisableMutexOrderGraph();
  auto options = farm::bench::ParseOptions(argc, argv);
  if (!options.ok()) {
    std::cerr << "sched_bench: " << options.status().ToString() << "\n";
    return 2;
  }
  farm::bench::Bench bench(std::move(options.value()));
  farm::Status s = bench.Run();
  if (!s.ok()) {
    std::cerr << "sched_bench: " << s.ToString() << "\n";
    return 1;
  }
  return 0;
}
