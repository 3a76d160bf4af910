// farmctl's usage text (the commands, one line each) and the table of every flag its
// commands take (name, value, help), from which `farmctl --help` and each command's help
// are printed. Tables only: commands.cc parses and dispatches.
#ifndef FARM_CLI_COMMAND_TABLE_H_
#define FARM_CLI_COMMAND_TABLE_H_

#include <vector>

#include "common/flags.h"

namespace farm::cli {

extern const char kCommandUsage[];

std::vector<FlagSpec> AllFlags();

}  // namespace farm::cli

#endif  // FARM_CLI_COMMAND_TABLE_H_
