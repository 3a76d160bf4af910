// farmctl quota [PRINCIPAL] | quota set PRINCIPAL ...: per-principal limits and what the
// principal holds (docs/limits.md, "Quotas").
#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"
#include "common/fs.h"

namespace farm::cli {
namespace {

constexpr char kQuotaUsage[] =
    "usage: farmctl quota [PRINCIPAL]\n"
    "       farmctl quota set PRINCIPAL [--submissions N] [--queued-jobs N] [--stored-bytes N]\n"
    "       (each N a number, unlimited, or default: the role's)";

constexpr int64_t kUnlimited = -1;
constexpr int64_t kRoleDefault = -2;

// A --submissions/--queued-jobs/--stored-bytes value; an absent flag keeps the role's.
Result<int64_t> LimitFlag(const Flags& flags, const std::string& name) {
  const std::string v = flags.Get(name, "default");
  if (v == "default") return kRoleDefault;
  if (v == "unlimited") return kUnlimited;
  auto n = flags.GetInt(name, 0);
  if (!n.ok() || *n < 0) {
    return Status::InvalidArgument("--" + name + " must be a number, unlimited or default");
  }
  return *n;
}

std::string Limit(int64_t v, const std::string& unit) {
  return v < 0 ? "unlimited" : std::to_string(v) + unit;
}

std::string FormatQuota(const farm::v1::Quota& q) {
  const farm::v1::QuotaLimits& l = q.limits();
  std::string window =
      q.window_seconds() == 3600 ? "hour" : std::to_string(q.window_seconds()) + " s";
  std::string out = "principal " + q.principal() + " (" + q.role() + " defaults" +
                    (q.has_admin_override() ? ", with an admin's override" : "") + ")\n";
  std::string left =
      q.submissions_left() < 0
          ? ""
          : " (" + std::to_string(static_cast<int64_t>(q.submissions_left())) + " left now)";
  out += "  submissions   " + Limit(l.submissions(), " per " + window) + left + "\n";
  out += "  queued jobs   " + std::to_string(q.queued_jobs()) + " of " +
         Limit(l.queued_jobs(), "") + "\n";
  out += "  stored bytes  " + fs::HumanBytes(q.stored_bytes()) + " of " +
         (l.stored_bytes() < 0 ? "unlimited" : fs::HumanBytes(l.stored_bytes())) + "\n";
  return out;
}

Status Show(const CommandEnv& env, const Flags& flags) {
  farm::v1::GetQuotaRequest req;
  if (flags.positionals().size() > 1) req.set_principal(flags.positionals()[1]);
  farm::v1::Quota resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetQuota, req, &resp));
  *env.out << (env.json ? ToJson(resp) + "\n" : FormatQuota(resp));
  return Status::Ok();
}

Status Set(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 3) return Status::InvalidArgument(kQuotaUsage);
  farm::v1::SetQuotaRequest req;
  req.set_principal(flags.positionals()[2]);
  FARM_ASSIGN_OR_RETURN(int64_t submissions, LimitFlag(flags, "submissions"));
  FARM_ASSIGN_OR_RETURN(int64_t queued, LimitFlag(flags, "queued-jobs"));
  FARM_ASSIGN_OR_RETURN(int64_t bytes, LimitFlag(flags, "stored-bytes"));
  req.mutable_limits()->set_submissions(submissions);
  req.mutable_limits()->set_queued_jobs(queued);
  req.mutable_limits()->set_stored_bytes(bytes);
  farm::v1::Quota resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::SetQuota, req, &resp));
  *env.out << (env.json ? ToJson(resp) + "\n" : FormatQuota(resp));
  return Status::Ok();
}

}  // namespace

Status QuotaCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() > 1 && flags.positionals()[1] == "set") return Set(env, flags);
  if (flags.positionals().size() > 2) return Status::InvalidArgument(kQuotaUsage);
  return Show(env, flags);
}

}  // namespace farm::cli
