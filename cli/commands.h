// farmctl's commands. RunFarmctl is the whole program behind main(): it parses the
// command line, talks to farmd and prints for people or, with --output json, for scripts.
//
// Exit codes: 0 success; 1 the operation failed (e.g. the build failed); 2 bad usage or
// input; 3 farmd unreachable; 4 authentication or permission refused; 5 over a quota or
// limit (the message says when to retry, when waiting helps).
#ifndef FARM_CLI_COMMANDS_H_
#define FARM_CLI_COMMANDS_H_

#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"
#include "cli/client.h"

namespace farm::cli {

int RunFarmctl(int argc, char** argv, std::ostream& out, std::ostream& err);

// Shared by the command implementations.
struct CommandEnv {
  FarmClient* client = nullptr;
  bool json = false;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

// Maps a Status to farmctl's exit code.
int ExitCodeFor(const Status& status);

}  // namespace farm::cli

#endif  // FARM_CLI_COMMANDS_H_
