// The worker's persistent identity: its id and token from Register, kept in
// <state_dir>/worker.json with mode 0600 so a restarted farm-worker is the same worker.
// Plain functions over one file; callers serialize access.
#ifndef FARM_WORKER_AGENT_STATE_H_
#define FARM_WORKER_AGENT_STATE_H_

#include <string>

#include "common/status.h"

namespace farm::agent {

struct WorkerIdentity {
  std::string worker_id;
  std::string worker_token;
  bool empty() const { return worker_id.empty() || worker_token.empty(); }
};

// Returns the stored identity, or an empty one when the file does not exist.
// DataLoss when the file exists but cannot be parsed.
Result<WorkerIdentity> LoadIdentity(const std::string& state_dir);

// Writes the identity atomically with mode 0600 (the directory is created 0700).
Status SaveIdentity(const std::string& state_dir, const WorkerIdentity& identity);

}  // namespace farm::agent

#endif  // FARM_WORKER_AGENT_STATE_H_
