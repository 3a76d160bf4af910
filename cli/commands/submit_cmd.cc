// farmctl submit / logs / download: the commands that stream.
#include <map>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/source_upload.h"
#include "common/clock.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

bool IsTerminal(farm::v1::BuildState s) {
  return s == farm::v1::BUILD_SUCCEEDED || s == farm::v1::BUILD_FAILED ||
         s == farm::v1::BUILD_CANCELLED;
}

// What --follow last said about each job, so it speaks only of changes: a new state, a
// new reason to wait, or progress (at most every kProgressEveryMs per job).
class FollowPrinter {
 public:
  explicit FollowPrinter(const CommandEnv& env) : env_(env) {}

  void Update(const farm::v1::Build& build) {
    for (const auto& j : build.jobs()) {
      Seen& seen = seen_[j.id()];
      std::string waiting = FormatWaiting(j);
      if (seen.state != j.state()) {
        seen.state = j.state();
        std::string what = ValidationLabel(j);
        Say("job " + std::to_string(j.id()) + " (" + (what.empty() ? "" : what + ", ") +
            CellLabel(j.cell()) + ") " + StateName(j.state()) +
            (j.worker_id().empty() ? "" : " on " + WorkerLabel(j.worker_name(), j.worker_id())) +
            (waiting.empty() ? "" : ": " + waiting));
      } else if (!waiting.empty() && waiting != seen.waiting) {
        Say("job " + std::to_string(j.id()) + " waits: " + waiting);
      }
      seen.waiting = waiting;
      std::string progress = FormatProgress(j);
      int64_t now = RealClock().SteadyMs();
      if (!progress.empty() && progress != seen.progress &&
          now - seen.progress_ms >= kProgressEveryMs) {
        Say("job " + std::to_string(j.id()) + " progress: " + progress);
        seen.progress = progress;
        seen.progress_ms = now;
      }
    }
  }

  // Log lines pass straight through; flushed, so `| tee` shows them as they come.
  void Log(const farm::v1::LogLine& line) {
    if (env_.json) return;
    *env_.out << FormatLogLine(line, true) << "\n";
    env_.out->flush();
  }

 private:
  static constexpr int64_t kProgressEveryMs = 2000;
  struct Seen {
    int state = -1;
    std::string waiting;
    std::string progress;
    int64_t progress_ms = INT64_MIN / 2;
  };

  void Say(const std::string& text) {
    if (env_.json) return;
    *env_.out << "farmctl: " << text << "\n";
    env_.out->flush();
  }

  const CommandEnv& env_;
  std::map<int64_t, Seen> seen_;
};

// Streams the build until it ends; returns its final state.
Result<farm::v1::Build> Follow(const CommandEnv& env, int64_t build_id) {
  farm::v1::WatchBuildRequest req;
  req.set_build_id(build_id);
  req.set_include_logs(true);
  auto ctx = env.client->Context(/*deadline=*/false);
  auto reader = env.client->stub()->WatchBuild(ctx.get(), req);
  farm::v1::BuildEvent ev;
  farm::v1::Build last;
  FollowPrinter printer(env);
  while (reader->Read(&ev)) {
    if (ev.has_log()) {
      printer.Log(ev.log());
    } else {
      last = ev.build();
      printer.Update(last);
    }
  }
  FARM_RETURN_IF_ERROR(FromGrpc(reader->Finish(), env.client->address()));
  if (!IsTerminal(last.state())) return Status::Unavailable("the watch ended before the build did");
  return last;
}

}  // namespace

Status DownloadArtifacts(const CommandEnv& env, const farm::v1::Build& build,
                         const std::string& dir);

Status SubmitCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 2)
    return Status::InvalidArgument("usage: farmctl submit RECIPE.yaml");
  FARM_ASSIGN_OR_RETURN(farm::v1::SubmitBuildRequest req,
                        PrepareBuildRequest(env, flags, flags.positionals()[1]));
  farm::v1::SubmitBuildResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::SubmitBuild, req, &resp));
  farm::v1::Build build = resp.build();
  if (!env.json) {
    *env.out << "farmctl: build " << build.id() << " of " << build.recipe_name()
             << " submitted with " << build.jobs_size() << " job(s)\n";
    for (const auto& r : build.rejected_cells())
      *env.out << "farmctl: rejected cell: " << r << "\n";
    env.out->flush();
  }
  if (flags.Has("follow")) {
    FARM_ASSIGN_OR_RETURN(build, Follow(env, build.id()));
  }
  if (env.json)
    *env.out << ToJson(build) << "\n";
  else if (flags.Has("follow"))
    *env.out << FormatBuild(build);
  if (flags.Has("follow") && flags.Has("download") && build.state() == farm::v1::BUILD_SUCCEEDED) {
    FARM_RETURN_IF_ERROR(DownloadArtifacts(env, build, flags.Get("download")));
  }
  if (flags.Has("follow") && build.state() != farm::v1::BUILD_SUCCEEDED) {
    return Status::Aborted("build " + std::to_string(build.id()) + " ended " +
                           StateName(build.state()));
  }
  return Status::Ok();
}

}  // namespace farm::cli
