// farmctl ca init|issue: the farm's own certificate authority (common/net/certificates.h).
// Local: needs no farmd and no token.
#include <ostream>

#include "cli/commands.h"
#include "common/flags.h"
#include "common/net/certificates.h"

namespace farm::cli {
namespace {

const char kCaUsage[] =
    "usage: farmctl ca init DIR [--name NAME] [--days N]\n"
    "       farmctl ca issue DIR NAME (--server-cert --host H [--host H]... | --client-cert)\n"
    "                        [--days N] [--out DIR]";

Result<int> Days(const Flags& flags, int fallback) {
  FARM_ASSIGN_OR_RETURN(int64_t days, flags.GetInt("days", fallback));
  if (days < 1 || days > 36500) return Status::InvalidArgument("--days must be 1..36500");
  return static_cast<int>(days);
}

}  // namespace

Status CaCommand(const Flags& flags, std::ostream& out) {
  const auto& args = flags.positionals();
  std::string verb = args.size() > 1 ? args[1] : "";
  if (verb == "init" && args.size() == 3) {
    FARM_ASSIGN_OR_RETURN(int days, Days(flags, 3650));
    FARM_RETURN_IF_ERROR(net::CreateCa(args[2], flags.Get("name", "GPU wheel farm CA"), days));
    out << "created the CA " << args[2] << "/ca.pem (give it to farmd --client-ca, workers "
        << "and farmctl --ca) and its key " << args[2] << "/ca.key (keep it on this machine)\n";
    return Status::Ok();
  }
  if (verb == "issue" && args.size() == 4) {
    net::CertRequest r;
    r.name = args[3];
    r.hosts = flags.GetAll("host");
    r.server = flags.Has("server-cert");
    r.client = flags.Has("client-cert");
    FARM_ASSIGN_OR_RETURN(r.days, Days(flags, 825));
    std::string dir = flags.Get("out", args[2]);
    FARM_RETURN_IF_ERROR(net::IssueCertificate(args[2], r, dir));
    out << "issued " << dir << "/" << r.name << ".pem and " << dir << "/" << r.name
        << ".key (mode 0600)\n";
    return Status::Ok();
  }
  return Status::InvalidArgument(kCaUsage);
}

}  // namespace farm::cli
