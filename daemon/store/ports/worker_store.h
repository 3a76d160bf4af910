// WorkerStore: the workers farmd knows, their heartbeats and drain requests, and the jobs
// each holds.
#ifndef FARM_DAEMON_STORE_PORTS_WORKER_STORE_H_
#define FARM_DAEMON_STORE_PORTS_WORKER_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"
#include "daemon/store/worker_state.h"

namespace farm::store {

struct WorkerRow {
  std::string id;
  std::string name;
  std::string capabilities;  // serialized farm.v1.Capabilities
  WorkerState state = WorkerState::kIdle;
  int64_t registered_ms = 0;
  int64_t last_heartbeat_ms = 0;
  bool drain_requested = false;
};

class WorkerStore {
 public:
  virtual ~WorkerStore() = default;

  virtual Status UpsertWorker(const WorkerRow& worker) = 0;
  virtual Result<WorkerRow> GetWorker(const std::string& id) = 0;
  virtual Result<std::vector<WorkerRow>> ListWorkers() = 0;
  virtual Status TouchWorker(const std::string& id, int64_t now_ms, WorkerState state) = 0;
  // Sets or clears the operator's drain request; NotFound for an unknown worker.
  virtual Status SetDrainRequested(const std::string& id, bool drain) = 0;
  // Number of jobs `worker_id` holds right now.
  virtual Result<int> CountRunningJobs(const std::string& worker_id) = 0;
  // The jobs `worker_id` holds right now, by id (at most 1000).
  virtual Result<std::vector<JobRow>> ListRunningJobs(const std::string& worker_id) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_WORKER_STORE_H_
