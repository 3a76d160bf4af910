// farmctl: the command-line client of farmd. See cli/commands.h.
#include <iostream>

#include "common/net/grpc_runtime.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  farm::net::DisableMutexOrderGraph();
  return farm::cli::RunFarmctl(argc, argv, std::cout, std::cerr);
}
