// farmctl's dispatcher and its small commands; submit and logs live in their own files.
#include "cli/commands.h"

#include <cstdlib>
#include <iostream>
#include <map>

#include "cli/command_table.h"
#include "cli/format.h"
#include "common/clock.h"
#include "common/flags.h"
#include "common/fs.h"
#include "common/version.h"

namespace farm::cli {

Status SubmitCommand(const CommandEnv& env, const Flags& flags);
Status LogsCommand(const CommandEnv& env, const Flags& flags);
Status DownloadCommand(const CommandEnv& env, const Flags& flags);
Status InspectCommand(const Flags& flags, std::ostream& out);
Status SchedulesCommand(const CommandEnv& env, const Flags& flags);
Status PublishCommand(const CommandEnv& env, const Flags& flags);
Status PublicationsCommand(const CommandEnv& env, const Flags& flags);
Status HostsCommand(const CommandEnv& env, const Flags& flags);
Status TokensCommand(const CommandEnv& env, const Flags& flags);
Status QuotaCommand(const CommandEnv& env, const Flags& flags);
Status NamesCommand(const CommandEnv& env, const Flags& flags);
Status ProjectsCommand(const CommandEnv& env, const Flags& flags);
Status AuditCommand(const CommandEnv& env, const Flags& flags);
Status CoverageCommand(const CommandEnv& env, const Flags& flags);
Status RequestCommand(const CommandEnv& env, const Flags& flags);
Status RequestsCommand(const CommandEnv& env, const Flags& flags);
Status CaCommand(const Flags& flags, std::ostream& out);
Status VerifyCommand(const Flags& flags, std::ostream& out, const FarmConnector& connect);
Status KeysCommand(const CommandEnv& env, const Flags& flags);
Status CacheCommand(const CommandEnv& env, const Flags& flags);
Status ExportIndexCommand(const Flags& flags, std::ostream& out, const FarmConnector& connect);
Status IndexCommand(const Flags& flags, std::ostream& out);

namespace {

Result<int64_t> IdArg(const Flags& flags, size_t index, const std::string& what) {
  if (flags.positionals().size() <= index) return Status::InvalidArgument("missing " + what);
  const std::string& s = flags.positionals()[index];
  try {
    size_t used = 0;
    int64_t id = std::stoll(s, &used);
    if (used == s.size() && id > 0) return id;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument(what + " must be a positive number, got \"" + s + "\"");
}

template <typename Msg>
void Print(const CommandEnv& env, const Msg& msg, const std::string& text) {
  *env.out << (env.json ? ToJson(msg) : text) << (text.empty() || text.back() != '\n' ? "\n" : "");
}

Status ListCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t limit, flags.GetInt("limit", 20));
  farm::v1::ListBuildsRequest req;
  req.set_page_size(static_cast<int32_t>(limit));
  farm::v1::ListBuildsResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListBuilds, req, &resp));
  std::string text =
      resp.builds().empty()
          ? "no builds\n"
          : FormatBuildList({resp.builds().begin(), resp.builds().end()}, RealClock().NowUnixMs());
  Print(env, resp, text);
  return Status::Ok();
}

Status ShowCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, IdArg(flags, 1, "BUILD id"));
  farm::v1::GetBuildRequest req;
  req.set_build_id(id);
  farm::v1::Build build;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetBuild, req, &build));
  Print(env, build, FormatBuild(build));
  return Status::Ok();
}

Status JobCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, IdArg(flags, 1, "JOB id"));
  farm::v1::GetJobRequest req;
  req.set_job_id(id);
  farm::v1::Job job;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetJob, req, &job));
  Print(env, job, FormatJob(job));
  return Status::Ok();
}

// The environment lock a provisioned build installs: its text on stdout (or --save), what it
// holds and what changed on stderr.
Status LockCommand(const CommandEnv& env, const Flags& flags) {
  farm::v1::GetLockRequest req;
  if (flags.Has("job")) {
    FARM_ASSIGN_OR_RETURN(int64_t job, flags.GetInt("job", 0));
    if (job <= 0) return Status::InvalidArgument("--job must be a positive number");
    req.set_job_id(job);
  } else {
    FARM_ASSIGN_OR_RETURN(int64_t build, IdArg(flags, 1, "BUILD id"));
    req.set_build_id(build);
  }
  farm::v1::GetLockResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetLock, req, &resp));
  const std::string about =
      "job " + std::to_string(resp.job_id()) + ": " + FormatLockInfo(resp.info()) + "\n";
  if (flags.Has("save")) {
    FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(flags.Get("save"), resp.text()));
    Print(env, resp.info(), about + "saved to " + flags.Get("save") + "\n");
  } else if (env.json) {
    Print(env, resp, "");
  } else {
    *env.out << resp.text();
    *env.err << about;
  }
  return Status::Ok();
}

Status RetryCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, IdArg(flags, 1, "JOB id"));
  farm::v1::RetryJobRequest req;
  req.set_job_id(id);
  farm::v1::Job job;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::RetryJob, req, &job));
  Print(env, job, "retrying job " + std::to_string(id) + "\n" + FormatJob(job));
  return Status::Ok();
}

Status ValidateCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, IdArg(flags, 1, "ARTIFACT id"));
  farm::v1::ValidateArtifactRequest req;
  req.set_artifact_id(id);
  farm::v1::Job job;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ValidateArtifact, req, &job));
  Print(env, job,
        "validating the wheels of artifact " + std::to_string(id) + "\n" + FormatJob(job));
  return Status::Ok();
}

Status CancelCommand(const CommandEnv& env, const Flags& flags) {
  FARM_ASSIGN_OR_RETURN(int64_t id, IdArg(flags, 1, "BUILD id"));
  farm::v1::CancelBuildRequest req;
  req.set_build_id(id);
  farm::v1::Build build;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::CancelBuild, req, &build));
  Print(env, build, "cancelling build " + std::to_string(id) + "\n" + FormatBuild(build));
  return Status::Ok();
}

Status WorkersCommand(const CommandEnv& env, const Flags&) {
  farm::v1::ListWorkersResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListWorkers, {}, &resp));
  std::string text = resp.workers().empty() ? "no workers\n" : WorkersHeader() + "\n";
  for (const auto& w : resp.workers()) text += FormatWorker(w) + "\n";
  Print(env, resp, text);
  return Status::Ok();
}

Status DrainCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 2)
    return Status::InvalidArgument("usage: farmctl drain WORKER [--undo]");
  farm::v1::DrainWorkerRequest req;
  req.set_worker_id(flags.positionals()[1]);
  req.set_undo(flags.Has("undo"));
  farm::v1::WorkerInfo worker;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::DrainWorker, req, &worker));
  Print(env, worker, (req.undo() ? "undrained " : "draining ") + FormatWorker(worker) + "\n");
  return Status::Ok();
}

// What `farmctl COMMAND --help` prints above the command's flags.
const std::map<std::string, std::string>& CommandSynopses() {
  static const std::map<std::string, std::string> kSynopses = {
      {"submit",
       "submit RECIPE.yaml [--python V] [--cuda V] [--arch-list L] [--follow] [--download DIR]\n"
       "  Submits a build of the recipe's matrix (or the axes given); prints the build."},
      {"list", "list [--limit N]\n  The newest builds."},
      {"show",
       "show BUILD\n  A build with its jobs, attempts, artifacts and why pending jobs wait."},
      {"job", "job JOB\n  One job."},
      {"lock",
       "lock BUILD [--job JOB] [--save FILE]\n  The environment lock (pylock.toml, PEP 751) a"
       " provisioned build installs, as farmd resolved it; what changed is on stderr."},
      {"logs",
       "logs JOB [--follow] [--tail N] [--attempt N]\n  A job's log; JSON Lines with --output "
       "json."},
      {"cancel", "cancel BUILD\n  Cancels a queued or running build (exit 1 for one that ended)."},
      {"retry", "retry JOB\n  Runs a failed or cancelled job again."},
      {"download",
       "download BUILD --dir DIR\n  Fetches the build's wheels, never overwriting a file."},
      {"validate",
       "validate ARTIFACT\n  Validates the wheels of the artifact's job again on a GPU they run on"
       " (a validation job; `farmctl show` lists it)."},
      {"inspect",
       "inspect FILE.whl|FILE.so [--arch-list L] [--cuobjdump]\n  Checks a wheel here; no farmd."},
      {"publish",
       "publish BUILD --to github|hf|all [--replace]\n  Publishes the build's wheels again."},
      {"publications",
       "publications BUILD\n  Where the build's wheels are published, and how far."},
      {"schedules",
       "schedules add RECIPE (--cron EXPR [--tz ZONE] | --watch-torch SPEC | --watch-tags GLOB |"
       " --watch-branch NAME | --watch-toolkit SPEC) | update ID RECIPE | list | show ID |"
       " pause ID | resume ID | delete ID | run-now ID\n"
       "  Builds fired by cron or by an upstream watch; update makes a schedule build a changed"
       " recipe, keeping what its watch has seen."},
      {"coverage",
       "coverage [--package NAME] [--torch V] [--cuda V] [--python V] [--arch A]"
       " [--state S]\n"
       "  Every cell (package x version x torch x CUDA x Python x arch list x"
       " platform) and its state."},
      {"request",
       "request PACKAGE --python V --compute-capability CC --platform TAG [--torch V"
       " --cuda V] [--package-version V]\n"
       "  Asks the farm for the wheel of one cell: built by a recipe of the farm's,"
       " answered with the wheel, or refused with the reason."},
      {"requests",
       "requests [list] [--state S] | approve ID | refuse ID --reason TEXT\n"
       "  Wheel requests, newest first, with their states; approving and refusing"
       " need an admin."},
      {"workers", "workers\n  Registered workers and what they have."},
      {"drain",
       "drain WORKER [--undo]\n  WORKER is its name or id: it finishes its jobs, takes no new "
       "ones."},
      {"cache",
       "cache add FILE... [--index NAME|URL] | cache add --tree NAME [--manifest FILE|NAME]"
       " [FILE...] | list\n"
       "  Preloads farmd's pull-through cache from local files (admin): wheels and sdists"
       " into an index, a redist manifest and the archives it lists into a tree. Workers"
       " then provision from them with upstream out of reach."},
      {"tokens",
       "tokens create --role ROLE [--name NAME] [--ttl 30d] | list | revoke ID\n"
       "  Bearer tokens (admin); a revoked token stops working at its next call."},
      {"quota",
       "quota [PRINCIPAL] | quota set PRINCIPAL [--submissions N] [--queued-jobs N]"
       " [--stored-bytes N]\n"
       "  A principal's limits and what it holds (yours; another's and set: admin)."},
      {"names",
       "names list | transfer NAME --to PRINCIPAL\n"
       "  Recipe names and the principal (token name) owning each: only the owner or an"
       " admin may build under a name. Transferring needs an admin."},
      {"projects",
       "projects list [NAME] | transfer NAME --to PRINCIPAL\n"
       "  Project (distribution) names and the principal owning each: the first whose"
       " build published a wheel of it. A build whose wheel names a project another"
       " principal owns fails its wheel check. Transferring needs an admin."},
      {"audit",
       "audit [--limit N] [--principal NAME]\n"
       "  The audit log, newest first: each mutation with who asked and whether it was"
       " allowed (admin)."},
      {"hosts",
       "hosts add NAME --address A --kind K [--var k=v] | provision NAME | list | show NAME\n"
       "  Hosts farmd provisions."},
      {"verify",
       "verify WHEEL|URL [--keys FILE|URL] [--provenance FILE|URL] [--require-validated-arch SM]"
       " [--owner P]\n"
       "  Checks the wheel's sha256 and its signed provenance against the farm's keys and\n"
       "  prints who built it where and where it was validated; no farmd. Exit 1: refused."},
      {"keys",
       "keys [list] | rotate | revoke KEYID --reason TEXT\n"
       "  The farm's provenance signing keys; rotating and revoking need an admin."},
      {"export-index",
       "export-index DIR [--from http://FARMD:PORT] [--base-url URL] [--force]\n"
       "  Writes farmd's package index (every GPU view, wheels, metadata, provenance, the\n"
       "  install script) into DIR as static files, replacing DIR atomically; no token."},
      {"index",
       "index make DIR [--force]\n"
       "  Makes the folder of wheels (and sdists) DIR a package index any static file server\n"
       "  serves: DIR/simple/ with PEP 503 and PEP 691 pages (sha256 on every link) and each\n"
       "  wheel's METADATA beside it (PEP 658); for farmd --upstream-index\n"
       "  NAME=http://HOST:PORT/simple/ (docs/first-index.md); no farmd."},
      {"ca",
       "ca init DIR [--name N] [--days D] | ca issue DIR NAME (--server-cert --host H... | "
       "--client-cert) [--out DIR]\n"
       "  A CA for the farm's TLS (docs/deployment.md) and certificates it signs; no farmd."},
  };
  return kSynopses;
}

// The flags of one command (their help starts "<command>:" or names it among others, as
// "submit, logs:") and the connection flags every command takes.
std::string CommandHelp(const std::string& command) {
  std::vector<FlagSpec> mine, common;
  for (const FlagSpec& f : AllFlags()) {
    size_t colon = f.help.find(':');
    std::string head = colon == std::string::npos ? "" : f.help.substr(0, colon);
    bool scoped = !head.empty() &&
                  head.find_first_not_of("abcdefghijklmnopqrstuvwxyz-, ") == std::string::npos;
    if (!scoped) {
      common.push_back(f);
    } else if ((", " + head + ",").find(", " + command + ",") != std::string::npos ||
               (", " + head + ",").find(" " + command + " ") != std::string::npos ||
               head.rfind(command + " ", 0) == 0) {
      mine.push_back(f);
    }
  }
  std::string out = "usage: farmctl [flags] " + CommandSynopses().at(command) + "\n";
  if (!mine.empty()) out += "flags of " + command + ":\n" + Flags(mine).Usage();
  return out + "connection and output flags:\n" + Flags(common).Usage();
}

using CommandFn = Status (*)(const CommandEnv&, const Flags&);

const std::map<std::string, CommandFn>& Commands() {
  static const std::map<std::string, CommandFn> kCommands = {
      {"submit", SubmitCommand},
      {"list", ListCommand},
      {"show", ShowCommand},
      {"job", JobCommand},
      {"lock", LockCommand},
      {"logs", LogsCommand},
      {"cancel", CancelCommand},
      {"workers", WorkersCommand},
      {"tokens", TokensCommand},
      {"quota", QuotaCommand},
      {"names", NamesCommand},
      {"projects", ProjectsCommand},
      {"audit", AuditCommand},
      {"coverage", CoverageCommand},
      {"request", RequestCommand},
      {"requests", RequestsCommand},
      {"download", DownloadCommand},
      {"drain", DrainCommand},
      {"retry", RetryCommand},
      {"validate", ValidateCommand},
      {"schedules", SchedulesCommand},
      {"publish", PublishCommand},
      {"publications", PublicationsCommand},
      {"hosts", HostsCommand},
      {"keys", KeysCommand},
      {"cache", CacheCommand},
  };
  return kCommands;
}

}  // namespace

namespace {

ConnectionOptions ConnectionFromFlags(const Flags& flags, net::ClientTls tls) {
  auto timeout = flags.GetInt("timeout-ms", 30000);
  return {flags.Get("server"),
          flags.Get("server-file"),
          flags.Get("token"),
          flags.Get("token-file"),
          timeout.ok() ? timeout.value() : 30000,
          std::move(tls)};
}

FarmConnector LocalCommandConnector(const Flags& flags) {
  bool named = flags.Has("server") || flags.Has("server-file") ||
               std::getenv("FARM_SERVER") != nullptr || std::getenv("FARM_SERVER_FILE") != nullptr;
  if (!named) return nullptr;
  return [&flags]() -> Result<std::unique_ptr<FarmClient>> {
    FARM_ASSIGN_OR_RETURN(net::ClientTls tls, net::ClientTlsFromFlags(flags));
    return FarmClient::Connect(ConnectionFromFlags(flags, std::move(tls)));
  };
}

}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      return 2;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return 3;
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return 4;
    case StatusCode::kResourceExhausted:
      return 5;
    default:
      return 1;
  }
}

int RunFarmctl(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Flags flags(AllFlags());
  Status parsed = flags.Parse(argc, argv);
  if (parsed.ok() && (flags.Has("config") || std::getenv("FARM_CONFIG") != nullptr)) {
    parsed = flags.MergeConfigFile(flags.Has("config") ? flags.Get("config")
                                                       : std::getenv("FARM_CONFIG"));
  }
  if (parsed.ok() && flags.Has("version")) {
    out << "farmctl " << FarmVersion() << "\n";
    return 0;
  }
  if (parsed.ok() && flags.Has("help") && !flags.positionals().empty() &&
      CommandSynopses().contains(flags.positionals()[0])) {
    out << CommandHelp(flags.positionals()[0]);
    return 0;
  }
  if (!parsed.ok()) {
    // One line that says what is wrong (and the flag meant), not the whole help.
    err << "farmctl: " << parsed.message() << "\n"
        << "`farmctl --help` lists the commands and flags, `farmctl COMMAND --help` one "
           "command's flags\n";
    return 2;
  }
  if (flags.Has("help") || flags.positionals().empty()) {
    (flags.Has("help") ? out : err) << kCommandUsage << flags.Usage();
    return flags.Has("help") ? 0 : 2;
  }
  const std::string& local = flags.positionals()[0];
  if (local == "inspect" || local == "ca" || local == "verify" || local == "export-index" ||
      local == "index") {
    // local: needs no gRPC connection and no token, but asks the farmd named, if any, for
    // what the user left out (the farm's keys, its HTTP address)
    FarmConnector connect = LocalCommandConnector(flags);
    Status s = local == "ca"             ? CaCommand(flags, out)
               : local == "verify"       ? VerifyCommand(flags, out, connect)
               : local == "export-index" ? ExportIndexCommand(flags, out, connect)
               : local == "index"        ? IndexCommand(flags, out)
                                         : InspectCommand(flags, out);
    if (!s.ok()) err << "farmctl: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  auto command = Commands().find(flags.positionals()[0]);
  if (command == Commands().end()) {
    err << "farmctl: unknown command \"" << flags.positionals()[0]
        << "\"; `farmctl --help` lists the commands, `farmctl COMMAND --help` one command's "
           "flags\n";
    return 2;
  }
  std::string output = flags.Get("output", "text");
  if (output != "text" && output != "json") {
    err << "farmctl: --output must be text or json\n";
    return 2;
  }
  auto tls = net::ClientTlsFromFlags(flags);
  if (!tls.ok()) {
    err << "farmctl: " << tls.status().message() << "\n";
    return 2;
  }
  auto client = FarmClient::Connect(ConnectionFromFlags(flags, std::move(tls).value()));
  Status status = client.ok()
                      ? command->second({client->get(), output == "json", &out, &err}, flags)
                      : client.status();
  if (!status.ok()) err << "farmctl: " << status.message() << "\n";
  return ExitCodeFor(status);
}

}  // namespace farm::cli
