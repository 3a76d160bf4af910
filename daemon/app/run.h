// Runs farmd until a stop signal: on PostgreSQL first waits to be the one active farmd of
// the database (a standby waits here), then serves until SIGTERM or SIGINT, or until the
// database lock is lost, when another farmd may be active.
#ifndef FARM_DAEMON_APP_RUN_H_
#define FARM_DAEMON_APP_RUN_H_

#include <csignal>

#include "daemon/app/server.h"

namespace farm::app {

// `stop` holds the signals that end farmd; the caller has blocked them in every thread.
// Returns the process's exit code: 0 after a stop signal, 1 when farmd could not start or
// lost its database lock.
int RunUntilStopped(const ServerOptions& options, const sigset_t& stop);

}  // namespace farm::app

#endif  // FARM_DAEMON_APP_RUN_H_
