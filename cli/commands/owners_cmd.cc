// farmctl names list|transfer, farmctl projects list|transfer and farmctl audit: who owns
// which recipe name and which project (distribution) name, giving a name to another
// principal (admin), and the audit log of every mutation (admin).
#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

constexpr char kNamesUsage[] =
    "usage: farmctl names list\n"
    "       farmctl names transfer NAME --to PRINCIPAL   (admin; PRINCIPAL is a token's name)";
constexpr char kProjectsUsage[] =
    "usage: farmctl projects list [NAME]\n"
    "       farmctl projects transfer NAME --to PRINCIPAL   (admin; PRINCIPAL is a token's name)";

std::string NameLine(const farm::v1::RecipeName& n) {
  return n.name() + "\t" + n.owner() + "\tclaimed " + n.claimed_at() +
         (n.updated_at() != n.claimed_at() ? "\tchanged owner " + n.updated_at() : "") + "\n";
}

// Recipe names, or with `projects` project names (only `name`'s when set).
Status ListNames(const CommandEnv& env, bool projects, const std::string& name) {
  auto* stub = env.client->stub();
  auto ctx = env.client->Context();
  google::protobuf::RepeatedPtrField<farm::v1::RecipeName> names;
  std::string json;
  if (projects) {
    farm::v1::ListProjectNamesRequest req;
    req.set_name(name);
    farm::v1::ListProjectNamesResponse resp;
    FARM_RETURN_IF_ERROR(
        FromGrpc(stub->ListProjectNames(ctx.get(), req, &resp), env.client->address()));
    names = resp.names();
    json = ToJson(resp);
  } else {
    farm::v1::ListRecipeNamesResponse resp;
    FARM_RETURN_IF_ERROR(
        FromGrpc(stub->ListRecipeNames(ctx.get(), {}, &resp), env.client->address()));
    names = resp.names();
    json = ToJson(resp);
  }
  if (env.json) {
    *env.out << json << "\n";
    return Status::Ok();
  }
  if (names.empty())
    *env.out << (projects ? "no project names" : "no recipe names") << " owned yet\n";
  for (const auto& n : names) *env.out << NameLine(n);
  return Status::Ok();
}

Status Transfer(const CommandEnv& env, const Flags& flags, bool projects) {
  if (flags.positionals().size() < 3 || flags.Get("to").empty()) {
    return Status::InvalidArgument(projects ? kProjectsUsage : kNamesUsage);
  }
  farm::v1::TransferRecipeNameRequest req;
  req.set_name(flags.positionals()[2]);
  req.set_to(flags.Get("to"));
  farm::v1::RecipeName resp;
  auto ctx = env.client->Context();
  grpc::Status call = projects ? env.client->stub()->TransferProjectName(ctx.get(), req, &resp)
                               : env.client->stub()->TransferRecipeName(ctx.get(), req, &resp);
  FARM_RETURN_IF_ERROR(FromGrpc(call, env.client->address()));
  *env.out << (env.json ? ToJson(resp) + "\n" : "transferred " + NameLine(resp));
  return Status::Ok();
}

std::string AuditLine(const farm::v1::AuditRecord& r) {
  std::string line = r.time() + "\t" + r.principal() + " (" + r.role() + ")\t" + r.action() + "\t" +
                     r.target() + "\t" + r.outcome();
  if (!r.detail().empty()) line += "\t" + r.detail();
  return line + "\n";
}

}  // namespace

Status NamesCommand(const CommandEnv& env, const Flags& flags) {
  const std::string verb = flags.positionals().size() > 1 ? flags.positionals()[1] : "";
  if (verb == "list") return ListNames(env, false, "");
  if (verb == "transfer") return Transfer(env, flags, false);
  return Status::InvalidArgument(kNamesUsage);
}

Status ProjectsCommand(const CommandEnv& env, const Flags& flags) {
  const auto& args = flags.positionals();
  const std::string verb = args.size() > 1 ? args[1] : "";
  if (verb == "list" && args.size() <= 3)
    return ListNames(env, true, args.size() == 3 ? args[2] : "");
  if (verb == "transfer") return Transfer(env, flags, true);
  return Status::InvalidArgument(kProjectsUsage);
}

Status AuditCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t limit, flags.GetInt("limit", 50));
  if (limit <= 0 || limit > 10000) {
    return Status::InvalidArgument("--limit must be between 1 and 10000");
  }
  farm::v1::ListAuditRequest req;
  req.set_limit(static_cast<int32_t>(limit));
  req.set_principal(flags.Get("principal"));
  farm::v1::ListAuditResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListAudit, req, &resp));
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
    return Status::Ok();
  }
  if (resp.records().empty()) *env.out << "no audit records\n";
  for (const auto& r : resp.records()) *env.out << AuditLine(r);
  return Status::Ok();
}

}  // namespace farm::cli
