// farmctl publish BUILD --to github|hf [--replace]: re-runs a build's publications.
// farmctl publications BUILD: shows them. farmd does the uploads with its own tokens; the
// client never sees one.
#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

Result<int64_t> BuildArg(const Flags& flags) {
  if (flags.positionals().size() < 2) return Status::InvalidArgument("missing BUILD id");
  const std::string& s = flags.positionals()[1];
  try {
    size_t used = 0;
    int64_t id = std::stoll(s, &used);
    if (used == s.size() && id > 0) return id;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument("BUILD id must be a positive number, got \"" + s + "\"");
}

std::string FormatPublication(const farm::v1::Publication& p) {
  std::string where = p.kind() == "release"    ? p.repo() + " release " + p.ref()
                      : p.target() == "github" ? p.repo() + "@" + p.ref() + " " + p.filename()
                                               : p.repo() + ":" + p.path();
  std::string line = "  " + p.target() + " " + p.kind() + "  " + p.state();
  line += " (" + std::to_string(p.attempts()) + " attempt" + (p.attempts() == 1 ? "" : "s") + ")";
  line += "  " + where;
  if (!p.remote_url().empty()) line += "\n      " + p.remote_url();
  if (!p.next_attempt_at().empty()) line += "\n      next attempt " + p.next_attempt_at();
  if (!p.error().empty()) line += "\n      " + p.error();
  return line + "\n";
}

template <typename Response>
std::string FormatPublications(int64_t build, const Response& resp) {
  if (resp.publications().empty()) return "build " + std::to_string(build) + ": no publications\n";
  std::string text = "build " + std::to_string(build) + " publications:\n";
  for (const auto& p : resp.publications()) text += FormatPublication(p);
  return text;
}

}  // namespace

Status PublishCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, BuildArg(flags));
  std::string target = flags.Get("to");
  if (target != "github" && target != "hf" && target != "all") {
    return Status::InvalidArgument("usage: farmctl publish BUILD --to github|hf|all [--replace]");
  }
  farm::v1::PublishBuildRequest req;
  req.set_build_id(id);
  req.set_target(target == "all" ? "" : target);
  req.set_replace(flags.Has("replace"));
  farm::v1::PublishBuildResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::PublishBuild, req, &resp));
  *env.out << (env.json ? ToJson(resp) + "\n" : "queued again; " + FormatPublications(id, resp));
  return Status::Ok();
}

Status PublicationsCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, BuildArg(flags));
  farm::v1::ListPublicationsRequest req;
  req.set_build_id(id);
  farm::v1::ListPublicationsResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListPublications, req, &resp));
  *env.out << (env.json ? ToJson(resp) + "\n" : FormatPublications(id, resp));
  return Status::Ok();
}

}  // namespace farm::cli
