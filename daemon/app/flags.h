// farmd's command line: the flags it takes and the ServerOptions they make. Each flag is
// checked here, so farmd refuses a bad value before it opens anything.
#ifndef FARM_DAEMON_APP_FLAGS_H_
#define FARM_DAEMON_APP_FLAGS_H_

#include <vector>

#include "common/flags.h"
#include "common/status.h"
#include "daemon/app/server.h"

namespace farm::app {

// Every flag farmd takes, with its help text (TLS and blob store flags included).
std::vector<FlagSpec> FarmdFlagSpecs();

// The options `flags` (parsed against FarmdFlagSpecs) ask for, over the defaults.
// InvalidArgument names the flag and what it wants.
Result<ServerOptions> OptionsFromFlags(const Flags& flags);

}  // namespace farm::app

#endif  // FARM_DAEMON_APP_FLAGS_H_
