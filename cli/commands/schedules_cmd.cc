// farmctl schedules add|update|list|show|pause|resume|delete|run-now.
#include <filesystem>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/source_upload.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

namespace stdfs = std::filesystem;

const char kSchedulesUsage[] =
    "usage: farmctl schedules add RECIPE.yaml (--cron EXPR [--tz ZONE] | WATCH) [--name N]\n"
    "           [--missed skip|run_once] [--concurrency skip|allow] [--paused]\n"
    "           [--python V] [--torch V] [--cuda V] [--arch-list L] [--platform P] [--force]\n"
    "           [--source-dir D | --source-tarball F] [--exclude PATTERN] [--no-gitignore]\n"
    "       farmctl schedules update ID RECIPE.yaml [the build flags of add]\n"
    "       farmctl schedules list | show ID [--limit N] | pause ID | resume ID | delete ID\n"
    "       farmctl schedules run-now ID [--force]\n"
    "  WATCH: --watch-torch SPEC [--watch-index NAME]... [--watch-prereleases]\n"
    "         [--watch-candidates]\n"
    "       | --watch-tags GLOB | --watch-branch NAME | --watch-toolkit SPEC [--watch-tree NAME]\n"
    "         [--poll SECONDS]";

std::string OutcomeName(farm::v1::ScheduleRunOutcome o) {
  return EnumWord(farm::v1::ScheduleRunOutcome_Name(o), "RUN_");
}

std::string RunLine(const farm::v1::ScheduleRun& r) {
  std::ostringstream o;
  o << "  run " << r.id() << "  " << r.created_at() << "  "
    << EnumWord(farm::v1::ScheduleTrigger_Name(r.trigger()), "TRIGGER_") << "  "
    << OutcomeName(r.outcome());
  if (r.build_id() > 0)
    o << "  build " << r.build_id() << " (" << StateName(r.build_state()) << ")";
  if (!r.resolved_commit().empty()) o << "  commit " << r.resolved_commit().substr(0, 12);
  if (!r.upstream_time().empty()) o << "  upstream " << r.upstream_time();
  if (!r.detail().empty()) o << "\n      " << r.detail();
  return o.str();
}

std::string WatchText(const farm::v1::UpstreamWatch& w) {
  std::string poll =
      w.poll_seconds() > 0 ? ", every " + std::to_string(w.poll_seconds()) + " s" : "";
  if (w.has_torch()) {
    std::string indexes;
    for (const auto& v : w.torch().variants()) indexes += (indexes.empty() ? " on " : ", ") + v;
    return "torch " + (w.torch().spec().empty() ? "any" : w.torch().spec()) + indexes +
           (w.torch().prereleases() ? " (pre-releases too)" : "") +
           (w.torch().release_candidates() ? " (release candidates too)" : "") + poll;
  }
  if (w.has_git()) {
    return (w.git().tags().empty() ? "branch " + w.git().branch() : "tags " + w.git().tags()) +
           poll;
  }
  return "CUDA " + (w.toolkit().spec().empty() ? "any" : w.toolkit().spec()) + poll;
}

std::string ScheduleText(const farm::v1::Schedule& s, bool runs) {
  std::ostringstream o;
  o << s.id() << "\t" << s.name() << "\t"
    << (s.has_watch() ? "watch " + WatchText(s.watch()) : "\"" + s.cron() + "\" " + s.time_zone())
    << "\t"
    << (s.paused()      ? "paused"
        : s.has_watch() ? "polls next " + s.next_fire_time()
                        : "next " + s.next_fire_local())
    << "\towner " << s.owner() << "\n";
  if (s.has_watch() && runs) o << "  watch: " << s.watch_status() << "\n";
  if (!runs) {
    if (s.recent_runs_size() > 0) o << RunLine(s.recent_runs(0)) << "\n";
    return o.str();
  }
  o << "  recipe " << s.recipe_name() << ", missed runs: "
    << EnumWord(farm::v1::MissedRunPolicy_Name(s.missed_run_policy()), "MISSED_")
    << ", concurrency: "
    << EnumWord(farm::v1::ConcurrencyPolicy_Name(s.concurrency_policy()), "CONCURRENCY_")
    << ", created by " << s.created_by() << " at " << s.created_at() << "\n";
  if (s.request().source().has_git()) {
    const auto& g = s.request().source().git();
    o << "  source git " << g.url() << (g.ref().empty() ? "" : " ref " + g.ref())
      << (g.commit().empty() ? "" : " commit " + g.commit()) << "\n";
  } else if (s.request().source().has_archive()) {
    const auto& a = s.request().source().archive();
    o << "  source " << a.origin() << ", archive sha256 " << a.sha256() << "\n";
  }
  for (const auto& r : s.recent_runs()) o << RunLine(r) << "\n";
  return o.str();
}

// The watch the flags ask for; nullopt when they ask for none.
Result<std::optional<farm::v1::UpstreamWatch>> WatchFromFlags(const Flags& flags) {
  farm::v1::UpstreamWatch w;
  int kinds = 0;
  if (flags.Has("watch-torch")) {
    ++kinds;
    std::string spec = flags.Get("watch-torch");
    w.mutable_torch()->set_spec(spec == "any" ? "" : spec);
    for (const std::string& index : flags.GetAll("watch-index"))
      w.mutable_torch()->add_variants(index);
    w.mutable_torch()->set_prereleases(flags.Has("watch-prereleases"));
    w.mutable_torch()->set_release_candidates(flags.Has("watch-candidates"));
  }
  if (flags.Has("watch-tags") || flags.Has("watch-branch")) {
    ++kinds;
    w.mutable_git()->set_tags(flags.Get("watch-tags"));
    w.mutable_git()->set_branch(flags.Get("watch-branch"));
  }
  if (flags.Has("watch-toolkit")) {
    ++kinds;
    std::string spec = flags.Get("watch-toolkit");
    w.mutable_toolkit()->set_spec(spec == "any" ? "" : spec);
    w.mutable_toolkit()->set_tree(flags.Get("watch-tree"));
  }
  if (kinds == 0) {
    if (flags.Has("poll")) return Status::InvalidArgument("--poll sets how often a watch polls");
    return std::optional<farm::v1::UpstreamWatch>();
  }
  if (kinds > 1) return Status::InvalidArgument("a schedule has one watch: torch, git or toolkit");
  FARM_ASSIGN_OR_RETURN(int64_t poll, flags.GetInt("poll", 0));
  if (poll < 0 || poll > 7 * 86400) {
    return Status::InvalidArgument("--poll must be seconds from 1 to 604800");
  }
  w.set_poll_seconds(static_cast<int32_t>(poll));
  return std::optional<farm::v1::UpstreamWatch>(w);
}

Status Add(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(auto watch, WatchFromFlags(flags));
  if (flags.positionals().size() < 3 || flags.Has("cron") == watch.has_value()) {
    return Status::InvalidArgument(kSchedulesUsage);
  }
  farm::v1::CreateScheduleRequest req;
  FARM_ASSIGN_OR_RETURN(*req.mutable_build(),
                        PrepareBuildRequest(env, flags, flags.positionals()[2]));
  req.set_name(flags.Get("name"));
  req.set_cron(flags.Get("cron"));
  req.set_time_zone(flags.Get("tz", "UTC"));
  std::string missed = flags.Get("missed", "skip");
  std::string concurrency = flags.Get("concurrency", "skip");
  if (missed != "skip" && missed != "run_once") {
    return Status::InvalidArgument("--missed must be skip or run_once");
  }
  if (concurrency != "skip" && concurrency != "allow") {
    return Status::InvalidArgument("--concurrency must be skip or allow");
  }
  req.set_missed_run_policy(missed == "skip" ? farm::v1::MISSED_SKIP : farm::v1::MISSED_RUN_ONCE);
  req.set_concurrency_policy(concurrency == "skip" ? farm::v1::CONCURRENCY_SKIP
                                                   : farm::v1::CONCURRENCY_ALLOW);
  req.set_paused(flags.Has("paused"));
  if (watch) *req.mutable_watch() = *watch;
  farm::v1::Schedule s;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::CreateSchedule, req, &s));
  *env.out << (env.json ? ToJson(s) : "created schedule " + ScheduleText(s, false)) << "\n";
  return Status::Ok();
}

// A schedule builds the changed recipe from now on; what its watch has seen stays seen
// (deleting and adding it again would take the upstream's current releases as seen).
Status Update(const CommandEnv& env, const Flags& flags) {
  const auto& args = flags.positionals();
  if (args.size() < 4) return Status::InvalidArgument(kSchedulesUsage);
  for (const char* when : {"cron", "tz", "missed", "concurrency", "paused", "watch-torch",
                           "watch-tags", "watch-branch", "watch-toolkit", "poll", "name"}) {
    if (flags.Has(when)) {
      return Status::InvalidArgument("schedules update changes what a schedule builds; --" +
                                     std::string(when) +
                                     " is how or when it fires: add another schedule for that");
    }
  }
  farm::v1::UpdateScheduleRequest req;
  req.set_schedule_id(args[2]);
  FARM_ASSIGN_OR_RETURN(*req.mutable_build(), PrepareBuildRequest(env, flags, args[3]));
  farm::v1::Schedule s;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::UpdateSchedule, req, &s));
  *env.out << (env.json ? ToJson(s) : "updated schedule " + ScheduleText(s, false)) << "\n";
  return Status::Ok();
}

Status List(const CommandEnv& env, const Flags& flags, const std::string& id) {
  farm::v1::ListSchedulesRequest req;
  req.set_schedule_id(id);
  FARM_ASSIGN_OR_RETURN(int64_t limit, flags.GetInt("limit", id.empty() ? 1 : 20));
  req.set_runs(static_cast<int32_t>(limit));
  farm::v1::ListSchedulesResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListSchedules, req, &resp));
  std::string text = resp.schedules().empty() ? "no schedules\n" : "";
  for (const auto& s : resp.schedules()) text += ScheduleText(s, !id.empty());
  if (env.json && id.empty()) {
    // A list is a summary: the texts the build request carries (the recipe, its patches,
    // validation script and required recipes) are for `schedules show ID`.
    for (auto& s : *resp.mutable_schedules()) {
      farm::v1::SubmitBuildRequest* r = s.mutable_request();
      r->clear_recipe_yaml();
      r->clear_patches();
      r->clear_validation_script();
      r->clear_environment_lock();
      r->clear_requirements();
    }
  }
  *env.out << (env.json ? ToJson(resp) + "\n" : text);
  return Status::Ok();
}

Status Change(const CommandEnv& env, const std::string& verb, const std::string& id) {
  farm::v1::ScheduleRef ref;
  ref.set_schedule_id(id);
  auto* stub = env.client->stub();
  auto ctx = env.client->Context();
  farm::v1::Schedule s;
  grpc::Status st;
  if (verb == "delete") {
    farm::v1::DeleteScheduleResponse resp;
    st = stub->DeleteSchedule(ctx.get(), ref, &resp);
    FARM_RETURN_IF_ERROR(FromGrpc(st, env.client->address()));
    *env.out << (env.json ? "{}" : "deleted schedule " + id) << "\n";
    return Status::Ok();
  }
  st = verb == "pause" ? stub->PauseSchedule(ctx.get(), ref, &s)
                       : stub->ResumeSchedule(ctx.get(), ref, &s);
  FARM_RETURN_IF_ERROR(FromGrpc(st, env.client->address()));
  *env.out << (env.json ? ToJson(s) + "\n" : ScheduleText(s, false));
  return Status::Ok();
}

Status RunNow(const CommandEnv& env, const Flags& flags, const std::string& id) {
  farm::v1::RunScheduleNowRequest req;
  req.set_schedule_id(id);
  req.set_force(flags.Has("force"));
  farm::v1::ScheduleRun run;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::RunScheduleNow, req, &run));
  *env.out << (env.json ? ToJson(run) : RunLine(run).substr(2)) << "\n";
  if (run.outcome() == farm::v1::RUN_FAILED) return Status::Aborted(run.detail());
  return Status::Ok();
}

}  // namespace

Status SchedulesCommand(const CommandEnv& env, const Flags& flags) {
  const auto& args = flags.positionals();
  std::string verb = args.size() > 1 ? args[1] : "list";
  if (verb == "add") return Add(env, flags);
  if (verb == "update") return Update(env, flags);
  if (verb == "list") return List(env, flags, "");
  if (args.size() < 3) return Status::InvalidArgument(kSchedulesUsage);
  if (verb == "show") return List(env, flags, args[2]);
  if (verb == "pause" || verb == "resume" || verb == "delete") return Change(env, verb, args[2]);
  if (verb == "run-now") return RunNow(env, flags, args[2]);
  return Status::InvalidArgument(kSchedulesUsage);
}

}  // namespace farm::cli
