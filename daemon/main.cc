// farmd: the coordinator daemon. Parses flags, then runs until SIGTERM or SIGINT
// (daemon/app/run.h).
#include <csignal>
#include <iostream>

#include "common/flags.h"
#include "common/log.h"
#include "common/net/grpc_runtime.h"
#include "common/version.h"
#include "daemon/app/flags.h"
#include "daemon/app/run.h"

int main(int argc, char** argv) {
  farm::net::DisableMutexOrderGraph();
  // Block the stop signals in every thread; RunUntilStopped waits for them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  farm::Flags flags(farm::app::FarmdFlagSpecs());
  farm::Status parsed = flags.Parse(argc, argv);
  if (parsed.ok() && flags.Has("config")) parsed = flags.MergeConfigFile(flags.Get("config"));
  if (parsed.ok() && flags.Has("version")) {
    std::cout << "farmd " << farm::FarmVersion() << "\n";
    return 0;
  }
  if (!parsed.ok() || flags.Has("help")) {
    std::cerr << (parsed.ok() ? "" : parsed.message() + "\n") << "usage: farmd [flags]\n"
              << flags.Usage();
    return parsed.ok() ? 0 : 2;
  }
  farm::log::InitLogging({.json = flags.Has("log-json"), .component = "farmd"});
  auto options = farm::app::OptionsFromFlags(flags);
  if (!options.ok()) {
    std::cerr << options.status().message() << "\n";
    return 2;
  }
  return farm::app::RunUntilStopped(*options, stop);
}
