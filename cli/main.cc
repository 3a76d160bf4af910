// farmctl: the command-line client of farmd. See cli/commands.h.
#include <iostream>

#include "cli/commands.h"
#include "common/net/grpc_runtime.h"

int main(int argc, char** argv) {
  farm::net::DisableMutexOrderGraph();
  return farm::cli::RunFarmctl(argc, argv, std::cout, std::cerr);
}
