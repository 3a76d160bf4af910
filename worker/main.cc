// farm-worker: the build agent on each GPU host. Parses flags, wires the real
// implementations into the agent, and turns SIGTERM/SIGINT into a clean stop.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string_view>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/net/grpc_runtime.h"
#include "common/version.h"
#include "worker/agent/agent.h"
#include "worker/exec/container_executor.h"
#include "worker/validate/validation.h"

int main(int argc, char** argv) {
  using namespace farm;
  net::DisableMutexOrderGraph();
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--version") {
      std::printf("farm-worker %s\n", FarmVersion());
      return 0;
    }
  }
  bool help = false;
  auto config = agent::ParseWorkerFlags(argc, argv, &help);
  if (help) {
    std::fputs(agent::WorkerUsage().c_str(), stdout);
    return 0;
  }
  if (!config.ok()) {
    std::fprintf(stderr, "farm-worker: %s\n%s", config.status().message().c_str(),
                 agent::WorkerUsage().c_str());
    return 2;
  }
  log::InitLogging(
      {config->verbose ? log::Level::kDebug : log::Level::kInfo, config->log_json, "farm-worker"});
  // Signals are taken by one thread with sigwait, so no handler runs inside library code.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  for (const auto& fake : config->test_fake_gpus) {
    log::Warn("TEST ONLY: reporting a GPU that is not there (--test-fake-gpu): " + fake.name +
              ", cc " + std::to_string(fake.cc_major) + "." + std::to_string(fake.cc_minor));
  }
  if (config->probe_only) return agent::PrintProbe(*config);
  auto token = agent::LoadEnrollToken(*config);
  if (!token.ok()) {
    log::Error(token.status().message());
    return 2;
  }
  agent::GrpcFarmClient client(
      [cfg = *config]() { return agent::ResolveServerAddress(cfg, 30000); }, config->tls);
  if (auto s = client.Connect(); !s.ok()) {
    log::Error(s.message());
    return s.code() == StatusCode::kUnavailable ? 3 : 2;
  }
  RealProcessRunner runner;
  agent::SystemProbe probe(*config, runner);
  auto executor =
      agent::MakeExecutor(*config, runner, [&probe] { return probe.AvailableMemoryBytes(); });
  if (!executor.ok()) {
    log::Error(executor.status().message());
    return 2;
  }
  // --container-network none: no job step may fetch from the network.
  agent::OfflineToolRunner offline(runner);
  ProcessRunner* tools = &runner;
  if (config->container_network == "none") tools = &offline;
  log::Info("builds run with the " + (*executor)->Name() + " executor");
  agent::Agent worker(
      *config, *token,
      {&client, &probe, tools, executor->get(), &RealClock(), agent::CheckWheelForJob});
  std::atomic<bool> run_ended{false};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (run_ended) return;  // woken below: nobody sent a signal
    log::Info(std::string("got ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
    worker.Stop();
  });
  farm::Status s = worker.Run();
  if (!s.ok()) log::Error(s.ToString());
  // Run() may end on its own (an error, a revoked token): wake the signal thread, which
  // would otherwise wait in sigwait forever. SIGTERM is blocked in every thread, so it
  // stays pending for that thread until its sigwait takes it.
  run_ended = true;
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  return s.ok() ? 0 : 1;
}
