// farmctl tokens create|list|revoke: bearer tokens (admin).
#include <cctype>

#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

constexpr char kTokensUsage[] =
    "usage: farmctl tokens create --role ROLE [--name NAME] [--ttl 30d]\n"
    "       farmctl tokens list\n"
    "       farmctl tokens revoke ID";

// "3600", "90m", "12h", "30d" -> seconds.
Result<int64_t> ParseTtl(const std::string& text) {
  if (text.empty()) return int64_t{0};
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string unit = text.substr(digits);
  int64_t scale = unit.empty() || unit == "s" ? 1
                  : unit == "m"               ? 60
                  : unit == "h"               ? 3600
                  : unit == "d"               ? 86400
                                              : 0;
  if (digits == 0 || digits > 12 || scale == 0) {
    return Status::InvalidArgument(
        "--ttl must be a number of seconds or end in s, m, h or d (\"30d\"), got \"" + text + "\"");
  }
  return std::stoll(text.substr(0, digits)) * scale;
}

std::string TokenLine(const farm::v1::TokenInfo& t) {
  std::string line = t.id() + "\t" + t.role() + "\t" + t.name() + "\tcreated " + t.created_at();
  if (!t.worker_id().empty()) line += "\tworker " + t.worker_id();
  if (!t.expires_at().empty()) line += "\texpires " + t.expires_at();
  if (!t.revoked_at().empty()) line += "\tREVOKED " + t.revoked_at();
  return line + "\n";
}

Status Create(const CommandEnv& env, const Flags& flags) {
  farm::v1::CreateTokenRequest req;
  req.set_role(flags.Get("role"));
  req.set_name(flags.Get("name"));
  if (req.role().empty()) return Status::InvalidArgument("--role is required");
  FARM_ASSIGN_OR_RETURN(int64_t ttl, ParseTtl(flags.Get("ttl")));
  req.set_ttl_seconds(ttl);
  farm::v1::CreateTokenResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::CreateToken, req, &resp));
  *env.out << (env.json ? ToJson(resp) : resp.token()) << "\n";
  if (!env.json) {
    *env.err << "token " << resp.id() << " (" << resp.role() << ", " << resp.name() << ")"
             << (resp.expires_at().empty() ? "" : ", expires " + resp.expires_at())
             << ": shown once, store it now\n";
  }
  return Status::Ok();
}

Status List(const CommandEnv& env) {
  farm::v1::ListTokensResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListTokens, {}, &resp));
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
    return Status::Ok();
  }
  for (const auto& t : resp.tokens()) *env.out << TokenLine(t);
  return Status::Ok();
}

Status Revoke(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 3) return Status::InvalidArgument(kTokensUsage);
  farm::v1::RevokeTokenRequest req;
  req.set_id(flags.positionals()[2]);
  farm::v1::TokenInfo resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::RevokeToken, req, &resp));
  *env.out << (env.json ? ToJson(resp) + "\n" : "revoked " + TokenLine(resp));
  return Status::Ok();
}

}  // namespace

Status TokensCommand(const CommandEnv& env, const Flags& flags) {
  const std::string verb = flags.positionals().size() > 1 ? flags.positionals()[1] : "";
  if (verb == "create") return Create(env, flags);
  if (verb == "list") return List(env);
  if (verb == "revoke") return Revoke(env, flags);
  return Status::InvalidArgument(kTokensUsage);
}

}  // namespace farm::cli
