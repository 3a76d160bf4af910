// farmctl: the command-line client of farmd. See daemon/cli/commands.h.
#include <iostream>

#include "daemon/cli/commands.h"

int main(int argc, char** argv) { return farm::cli::RunFarmctl(argc, argv, std::cout, std::cerr); }
