// farmctl hosts add|provision|list|show: the hosts farmd provisions with the playbooks.
//   hosts add NAME --address ADDR --kind KIND [--var k=v ...] [--replace]
//   hosts provision NAME [--no-wait]   runs workers.yml for the host; waits by default
//   hosts list                          hosts, their last run and the registered worker
//   hosts show NAME                     one host with its last provisioning log
// The enrollment token stays inside farmd: no command sends or prints one.
#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

const char kHostsUsage[] =
    "usage: farmctl hosts add NAME --address ADDR --kind gb10|rtx5090|wsl2|datacenter "
    "[--var k=v ...] [--replace]\n"
    "       farmctl hosts provision NAME [--no-wait]\n"
    "       farmctl hosts list\n"
    "       farmctl hosts show NAME";

Result<std::string> NameArg(const Flags& flags) {
  if (flags.positionals().size() < 3) return Status::InvalidArgument(kHostsUsage);
  return flags.positionals()[2];
}

std::string FormatHostLine(const farm::v1::Host& h) {
  std::string line = h.name() + "  " + h.kind() + "  " + h.address() + "  " + h.state();
  if (h.runs() > 0) {
    line += " (run " + std::to_string(h.runs()) + ": ok=" + std::to_string(h.ok()) +
            " changed=" + std::to_string(h.changed()) + " failed=" + std::to_string(h.failed()) +
            " unreachable=" + std::to_string(h.unreachable()) +
            (h.finished_at().empty() ? "" : ", finished " + h.finished_at()) + ")";
  }
  line += h.worker_id().empty() ? "  worker: none"
                                : "  worker: " + h.worker_id() + " (" + h.worker_state() + ")";
  if (!h.error().empty()) line += "\n    error: " + h.error();
  return line + "\n";
}

std::string FormatHost(const farm::v1::Host& h) {
  std::string text = FormatHostLine(h);
  for (const auto& [k, v] : h.vars()) text += "    " + k + "=" + v + "\n";
  if (!h.log().empty()) text += "--- last provisioning log ---\n" + h.log();
  return text;
}

Status AddHost(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(std::string name, NameArg(flags));
  farm::v1::AddHostRequest req;
  req.set_name(name);
  req.set_address(flags.Get("address"));
  req.set_kind(flags.Get("kind"));
  req.set_replace(flags.Has("replace"));
  if (req.address().empty() || req.kind().empty()) {
    return Status::InvalidArgument("--address and --kind are required\n" +
                                   std::string(kHostsUsage));
  }
  for (const auto& kv : flags.GetAll("var")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--var needs KEY=VALUE, got \"" + kv + "\"");
    }
    (*req.mutable_vars())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  farm::v1::Host host;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::AddHost, req, &host));
  *env.out << (env.json ? ToJson(host) + "\n" : "recorded " + FormatHost(host));
  return Status::Ok();
}

Status ProvisionHost(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(std::string name, NameArg(flags));
  farm::v1::ProvisionHostRequest req;
  req.set_name(name);
  req.set_wait(!flags.Has("no-wait"));
  farm::v1::Host host;
  // A run takes minutes on a real host: no call deadline while waiting for it.
  FARM_RETURN_IF_ERROR(FromGrpc(
      env.client->stub()->ProvisionHost(env.client->Context(!req.wait()).get(), req, &host),
      env.client->address()));
  *env.out << (env.json ? ToJson(host) + "\n" : FormatHostLine(host));
  if (req.wait() && host.state() == "failed") {
    return Status::Aborted("provisioning " + name + " failed: " + host.error() +
                           " (farmctl hosts show " + name + " prints the log)");
  }
  return Status::Ok();
}

Status ListHosts(const CommandEnv& env, const Flags& flags, bool one) {
  farm::v1::ListHostsRequest req;
  if (one) {
    FARM_ASSIGN_OR_RETURN(std::string name, NameArg(flags));
    req.set_name(name);
    req.set_include_log(true);
  }
  farm::v1::ListHostsResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListHosts, req, &resp));
  std::string text = resp.hosts().empty() ? "no hosts\n" : "";
  for (const auto& h : resp.hosts()) text += one ? FormatHost(h) : FormatHostLine(h);
  *env.out << (env.json ? ToJson(resp) + "\n" : text);
  return Status::Ok();
}

}  // namespace

Status HostsCommand(const CommandEnv& env, const Flags& flags) {
  const auto& args = flags.positionals();
  std::string sub = args.size() >= 2 ? args[1] : "";
  if (sub == "add") return AddHost(env, flags);
  if (sub == "provision") return ProvisionHost(env, flags);
  if (sub == "list") return ListHosts(env, flags, false);
  if (sub == "show") return ListHosts(env, flags, true);
  return Status::InvalidArgument(kHostsUsage);
}

}  // namespace farm::cli
