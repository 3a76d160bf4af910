// farmctl's commands. RunFarmctl is the whole program behind main(): it parses the
// command line, talks to farmd and prints for people or, with --output json, for scripts.
//
// Exit codes: 0 success; 1 the operation failed (e.g. the build failed); 2 bad usage or
// input; 3 farmd unreachable; 4 authentication or permission refused; 5 over a quota or
// limit (the message says when to retry, when waiting helps).
#ifndef FARM_CLI_COMMANDS_H_
#define FARM_CLI_COMMANDS_H_

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/client.h"
#include "common/status.h"

namespace farm::cli {

int RunFarmctl(int argc, char** argv, std::ostream& out, std::ostream& err);

// Shared by the command implementations.
struct CommandEnv {
  FarmClient* client = nullptr;
  bool json = false;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

// How a command that needs no farmd (verify, export-index) reaches the farmd farmctl is
// pointed at, to fill in what the user left out: null when no farmd is named (--server,
// --server-file, $FARM_SERVER, $FARM_SERVER_FILE or the config file); else it connects
// when called.
using FarmConnector = std::function<Result<std::unique_ptr<FarmClient>>()>;

// Maps a Status to farmctl's exit code.
int ExitCodeFor(const Status& status);

}  // namespace farm::cli

#endif  // FARM_CLI_COMMANDS_H_
