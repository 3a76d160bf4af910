// HostManager: the hosts farmd provisions. Add() records a host; Provision() runs
// playbooks/workers.yml limited to that host with ansible-playbook, from a generated
// inventory and an extra-vars file (0600, removed after the run) holding the host's
// enrollment token, streams the output (redacted) into the host's stored log and records
// the result: provisioned or failed, the PLAY RECAP counts, the finish time.
//
// Each host gets its own enrollment token, minted on its first run and kept in
// <work_dir>/<name>/enroll.token (0600), so a second run changes nothing on the host.
// The token never appears on a command line, in the inventory or in a log.
//
// Thread-safe. Runs happen on their own threads; Stop() (or the destructor) kills the
// running ansible-playbook processes and joins them.
#ifndef FARM_DAEMON_HOSTS_HOST_MANAGER_H_
#define FARM_DAEMON_HOSTS_HOST_MANAGER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"
#include "daemon/store/store.h"

namespace farm::hosts {

struct RunOutcome;  // host_manager.cc

struct HostOptions {
  std::string playbooks_dir;   // holds workers.yml and ansible.cfg; "" = cannot provision
  std::string group_vars_dir;  // the kinds' group_vars (linked next to the inventory)
  std::string work_dir;        // per-host inventories, tokens and Ansible temp files
  std::string ansible_playbook = "ansible-playbook";
  int64_t timeout_ms = 2 * 60 * 60 * 1000;
  // The environment of ansible-playbook (farmd's own minus its secrets); ANSIBLE_* settings
  // are added on top.
  std::map<std::string, std::string> env;
};

// Mints an enrollment token for `host` (only its hash is stored by farmd).
using MintTokenFn = std::function<Result<std::string>(const std::string& host)>;

class HostManager {
 public:
  HostManager(store::Store* store, ProcessRunner* runner, const Clock* clock, HostOptions options,
              MintTokenFn mint);
  ~HostManager();

  // The address workers dial (farm_worker_server unless the host's vars set it). Provision
  // answers Unavailable until it is set.
  void SetServerAddress(const std::string& address);

  // Records a host. InvalidArgument for bad fields (see ValidateHost); AlreadyExists for a
  // known name unless `replace`. Returns the stored row.
  Result<store::HostRow> Add(const std::string& name, const std::string& address,
                             const std::string& kind,
                             const std::map<std::string, std::string>& vars, bool replace);

  // Starts a provisioning run of `name`. With `wait`, returns when it ended (the row then
  // says how); else at once with state provisioning. NotFound for an unknown host,
  // FailedPrecondition while a run of it is going or without a playbooks directory.
  Result<store::HostRow> Provision(const std::string& name, bool wait);

  // Kills running runs (they end failed) and waits for their threads. Idempotent.
  void Stop();

  // The default environment for ansible-playbook: PATH, HOME, LANG, USER, LOGNAME,
  // SSH_AUTH_SOCK and TMPDIR of this process, nothing else.
  static std::map<std::string, std::string> AnsibleEnv();

  // The playbooks directory of a source checkout next to `exe` (build/daemon/farmd ->
  // playbooks/), or "" when there is none.
  static std::string FindPlaybooksDir(const std::string& exe);

 private:
  struct Run;
  void Execute(const std::string& name, const std::shared_ptr<Run>& run);
  // ansible-playbook for host `name`, with the inventory and secrets of `dir`.
  ProcessSpec PlaybookSpec(const std::string& name, const std::string& dir) const;
  // Runs `spec`, storing its redacted log as it comes, into `out`.
  void RunPlaybook(const std::string& name, const ProcessSpec& spec,
                   const std::shared_ptr<Run>& run, RunOutcome* out);
  Result<std::string> HostToken(const std::string& name);
  Status Prepare(const store::HostRow& host, const std::string& dir, const std::string& token);
  store::HostRow Finish(const store::HostRow& host, const RunOutcome& outcome);

  store::Store* const store_;
  ProcessRunner* const runner_;
  const Clock* const clock_;
  const HostOptions options_;
  const MintTokenFn mint_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::string server_address_;            // guarded by mu_
  bool stopping_ = false;                 // guarded by mu_
  std::list<std::shared_ptr<Run>> runs_;  // guarded by mu_
};

}  // namespace farm::hosts

#endif  // FARM_DAEMON_HOSTS_HOST_MANAGER_H_
