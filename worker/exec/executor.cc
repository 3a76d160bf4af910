#include "worker/exec/executor.h"

extern char** environ;

namespace farm::agent {

EnvMap CurrentEnv() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace farm::agent
