#include "daemon/app/run.h"

#include <memory>
#include <string>
#include <utility>

#include "common/log.h"
#include "daemon/store/sql_store/postgres.h"

namespace farm::app {
namespace {

// On PostgreSQL, the database's farmd lock; null for a SQLite file. A standby waits here,
// before any thread exists, with the stop signals unblocked so that SIGTERM simply ends it;
// the lock is held until this process ends.
Result<std::unique_ptr<store::ActiveFarmdLock>> BecomeActive(const ServerOptions& options,
                                                             const sigset_t& stop) {
  if (!store::IsPostgresUrl(options.store)) return std::unique_ptr<store::ActiveFarmdLock>();
  pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
  auto lock = store::ActiveFarmdLock::Acquire(options.store, [] {
    log::Info("standby: another farmd is active on this database; waiting for it to end");
  });
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  if (lock.ok()) log::Info("active: holding the farmd lock of the database");
  return lock;
}

}  // namespace

int RunUntilStopped(const ServerOptions& options, const sigset_t& stop) {
  auto active = BecomeActive(options, stop);
  if (!active.ok()) {
    log::Error("cannot start: " + active.status().ToString());
    return 1;
  }
  auto server = FarmServer::Start(options);
  if (!server.ok()) {
    log::Error("cannot start: " + server.status().ToString());
    return 1;
  }
  // Wait for a stop signal; on PostgreSQL also look every 2 s that the lock's session
  // lives: once it is gone a standby may be active, so this farmd stops.
  int sig = -1;
  while (sig <= 0) {
    timespec every{.tv_sec = 2, .tv_nsec = 0};
    sig = sigtimedwait(&stop, nullptr, &every);
    if (sig <= 0 && *active) {
      if (Status held = (*active)->Check(); !held.ok()) {
        log::Error("lost the farmd lock of the database (" + held.ToString() +
                   "); stopping, as another farmd may be active now");
        server.value()->Shutdown();
        return 1;
      }
    }
  }
  log::Info(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", shutting down");
  server.value()->Shutdown();
  return 0;
}

}  // namespace farm::app
