// What one provisioning run is made of, as pure functions: checking a host's fields,
// the Ansible inventory generated for it, the extra-vars file that carries the
// enrollment token, and the PLAY RECAP counts read back from ansible-playbook's output.
// No I/O; safe from any thread.
#ifndef FARM_DAEMON_HOSTS_INVENTORY_H_
#define FARM_DAEMON_HOSTS_INVENTORY_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::hosts {

// The host kinds: the worker groups of playbooks/inventories/example/hosts.yml.
const std::vector<std::string>& HostKinds();

// Checks a host before it is stored. On success OK; InvalidArgument naming the field
// otherwise: a name usable as inventory name, file name and --limit pattern
// ([A-Za-z0-9][A-Za-z0-9._-]*), an address without spaces, a known kind, variable names
// that are Ansible identifiers and values that parse as YAML. The enrollment token is
// never a host variable (farmd passes its own).
Status ValidateHost(const std::string& name, const std::string& address, const std::string& kind,
                    const std::map<std::string, std::string>& vars);

struct InventoryInput {
  std::string name;
  std::string address;
  std::string kind;
  std::map<std::string, std::string> vars;  // YAML values; they win over the defaults
  std::string server_address;               // farm_worker_server unless vars set it
};

// The inventory YAML: group workers > kind > the host, with ansible_host, the worker's
// name and server, then the host's variables parsed as YAML. Holds no secret.
Result<std::string> InventoryYaml(const InventoryInput& in);

// The extra-vars YAML with the enrollment token (written to a 0600 file, passed as
// -e @FILE, removed after the run).
std::string SecretVarsYaml(const std::string& enroll_token);

// One host's line of PLAY RECAP.
struct Recap {
  int ok = 0;
  int changed = 0;
  int unreachable = 0;
  int failed = 0;
};

// Reads "NAME : ok=N changed=N unreachable=N failed=N ..." for `host`; nullopt for
// any other line.
std::optional<Recap> ParseRecapLine(const std::string& line, const std::string& host);

}  // namespace farm::hosts

#endif  // FARM_DAEMON_HOSTS_INVENTORY_H_
