// HostStore: the machines farmd provisions with the playbooks, and each one's last run.
#ifndef FARM_DAEMON_STORE_PORTS_HOST_STORE_H_
#define FARM_DAEMON_STORE_PORTS_HOST_STORE_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// A machine farmd provisions with the playbooks. States: added, provisioning,
// provisioned, failed. Counts are the last run's PLAY RECAP for the host.
struct HostRow {
  std::string name;
  std::string address;
  std::string kind;
  std::string vars;  // serialized farm.v1.Host holding only vars
  std::string state = "added";
  int changed = 0;
  int ok = 0;
  int failed = 0;
  int unreachable = 0;
  int runs = 0;
  std::string error;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
};

class HostStore {
 public:
  virtual ~HostStore() = default;

  // Inserts the host; with `replace` an existing host gets the new address, kind and vars
  // (its state and last run stay). AlreadyExists for a known host without `replace`.
  virtual Status UpsertHost(const HostRow& host, bool replace) = 0;
  // NotFound for an unknown host.
  virtual Result<HostRow> GetHost(const std::string& name) = 0;
  // Every host, by name.
  virtual Result<std::vector<HostRow>> ListHosts() = 0;
  // Starts a run: state provisioning, runs + 1, started_ms, empty log and error.
  // FailedPrecondition while a run is going; NotFound for an unknown host.
  virtual Status BeginHostRun(const std::string& name, int64_t now_ms) = 0;
  // Appends output to the running run's log.
  virtual Status AppendHostLog(const std::string& name, const std::string& text) = 0;
  // Records how the run ended: state, counts, error and finished_ms from `result`.
  virtual Status FinishHostRun(const HostRow& result) = 0;
  // The last run's log ("" before any run).
  virtual Result<std::string> GetHostLog(const std::string& name) = 0;
  // Runs left "provisioning" by a farmd that stopped during them end as failed. Returns
  // how many.
  virtual Result<int> FailInterruptedHostRuns(int64_t now_ms) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_HOST_STORE_H_
