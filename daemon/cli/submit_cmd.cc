// farmctl submit / logs / download: the commands that stream.
#include "common/flags.h"
#include "daemon/cli/commands.h"
#include "daemon/cli/format.h"
#include "daemon/cli/source_upload.h"

namespace farm::cli {
namespace {

bool IsTerminal(farm::v1::BuildState s) {
  return s == farm::v1::BUILD_SUCCEEDED || s == farm::v1::BUILD_FAILED ||
         s == farm::v1::BUILD_CANCELLED;
}

// Streams the build until it ends; returns its final state.
Result<farm::v1::Build> Follow(const CommandEnv& env, int64_t build_id) {
  farm::v1::WatchBuildRequest req;
  req.set_build_id(build_id);
  req.set_include_logs(true);
  auto ctx = env.client->Context(/*deadline=*/false);
  auto reader = env.client->stub()->WatchBuild(ctx.get(), req);
  farm::v1::BuildEvent ev;
  farm::v1::Build last;
  std::map<int64_t, int> job_states;
  while (reader->Read(&ev)) {
    if (ev.has_log()) {
      if (!env.json) *env.out << FormatLogLine(ev.log(), true) << "\n";
      continue;
    }
    last = ev.build();
    for (const auto& j : last.jobs()) {
      if (job_states[j.id()] == j.state()) continue;
      job_states[j.id()] = j.state();
      if (!env.json) {
        *env.out << "farmctl: job " << j.id() << " (" << CellLabel(j.cell()) << ") " << StateName(j.state())
                 << (j.worker_id().empty() ? "" : " on " + j.worker_id()) << "\n";
      }
    }
  }
  FARM_RETURN_IF_ERROR(FromGrpc(reader->Finish(), env.client->address()));
  if (!IsTerminal(last.state())) return Status::Unavailable("the watch ended before the build did");
  return last;
}

}  // namespace

Status DownloadArtifacts(const CommandEnv& env, const farm::v1::Build& build, const std::string& dir);

Status SubmitCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 2) return Status::InvalidArgument("usage: farmctl submit RECIPE.yaml");
  FARM_ASSIGN_OR_RETURN(farm::v1::SubmitBuildRequest req,
                        PrepareBuildRequest(env, flags, flags.positionals()[1]));
  farm::v1::SubmitBuildResponse resp;
  FARM_RETURN_IF_ERROR(FromGrpc(env.client->stub()->SubmitBuild(env.client->Context().get(), req, &resp),
                                env.client->address()));
  farm::v1::Build build = resp.build();
  if (!env.json) {
    *env.out << "farmctl: build " << build.id() << " of " << build.recipe_name() << " submitted with "
             << build.jobs_size() << " job(s)\n";
    for (const auto& r : build.rejected_cells()) *env.out << "farmctl: rejected cell: " << r << "\n";
  }
  if (flags.Has("follow")) {
    FARM_ASSIGN_OR_RETURN(build, Follow(env, build.id()));
  }
  if (env.json) *env.out << ToJson(build) << "\n";
  else if (flags.Has("follow")) *env.out << FormatBuild(build);
  if (flags.Has("follow") && flags.Has("download") && build.state() == farm::v1::BUILD_SUCCEEDED) {
    FARM_RETURN_IF_ERROR(DownloadArtifacts(env, build, flags.Get("download")));
  }
  if (flags.Has("follow") && build.state() != farm::v1::BUILD_SUCCEEDED) {
    return Status::Aborted("build " + std::to_string(build.id()) + " ended " + StateName(build.state()));
  }
  return Status::Ok();
}

}  // namespace farm::cli
