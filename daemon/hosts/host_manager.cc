#include "daemon/hosts/host_manager.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/fs.h"
#include "common/log.h"
#include "common/strings.h"
#include "daemon/hosts/inventory.h"
#include "farm/v1/client.pb.h"

namespace farm::hosts {
namespace {

namespace stdfs = std::filesystem;

constexpr size_t kFlushLines = 20;
constexpr int64_t kFlushMs = 1000;
constexpr size_t kMaxErrorChars = 400;

bool LooksLikeFailure(const std::string& line) {
  return line.rfind("fatal:", 0) == 0 || line.rfind("ERROR!", 0) == 0 ||
         line.find("FAILED!") != std::string::npos;
}

std::map<std::string, std::string> VarsOf(const store::HostRow& host) {
  farm::v1::Host h;
  if (!host.vars.empty()) h.ParseFromString(host.vars);
  return {h.vars().begin(), h.vars().end()};
}

}  // namespace

// How a run ended, before it is stored.
struct RunOutcome {
  bool started = false;
  int exit_code = -1;
  bool timed_out = false;
  std::optional<Recap> recap;
  std::string failure_line;  // the last "fatal:" / "ERROR!" line, redacted
  std::string error;         // set when the run could not start
};

struct HostManager::Run {
  std::string name;
  std::thread thread;
  Process* process = nullptr;  // guarded by HostManager::mu_
  bool done = false;           // guarded by HostManager::mu_
};

HostManager::HostManager(store::Store* store, ProcessRunner* runner, const Clock* clock,
                         HostOptions options, MintTokenFn mint)
    : store_(store),
      runner_(runner),
      clock_(clock),
      options_(std::move(options)),
      mint_(std::move(mint)) {
  auto failed = store_->FailInterruptedHostRuns(clock_->NowUnixMs());
  if (failed.ok() && *failed > 0) {
    log::Warn(std::to_string(*failed) + " host provisioning run(s) were cut off by a restart");
  }
}

HostManager::~HostManager() { Stop(); }

void HostManager::SetServerAddress(const std::string& address) {
  std::lock_guard lock(mu_);
  server_address_ = address;
}

std::map<std::string, std::string> HostManager::AnsibleEnv() {
  std::map<std::string, std::string> env;
  for (const char* k :
       {"PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "SSH_AUTH_SOCK", "TMPDIR"}) {
    if (const char* v = std::getenv(k); v != nullptr) env[k] = v;
  }
  if (env.count("PATH") == 0) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  return env;
}

std::string HostManager::FindPlaybooksDir(const std::string& exe) {
  std::error_code ec;
  stdfs::path dir = stdfs::weakly_canonical(exe, ec).parent_path();
  for (int up = 0; up < 4 && !dir.empty(); ++up) {
    for (const char* sub : {"playbooks", "share/farm/playbooks"}) {
      stdfs::path candidate = dir / sub;
      if (stdfs::exists(candidate / "workers.yml", ec)) return candidate.string();
    }
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return "";
}

Result<store::HostRow> HostManager::Add(const std::string& name, const std::string& address,
                                        const std::string& kind,
                                        const std::map<std::string, std::string>& vars,
                                        bool replace) {
  FARM_RETURN_IF_ERROR(ValidateHost(name, address, kind, vars));
  farm::v1::Host only_vars;
  only_vars.mutable_vars()->insert(vars.begin(), vars.end());
  store::HostRow row;
  row.name = name;
  row.address = address;
  row.kind = kind;
  row.vars = only_vars.SerializeAsString();
  row.created_ms = clock_->NowUnixMs();
  FARM_RETURN_IF_ERROR(store_->UpsertHost(row, replace));
  return store_->GetHost(name);
}

Result<store::HostRow> HostManager::Provision(const std::string& name, bool wait) {
  if (options_.playbooks_dir.empty()) {
    return Status::FailedPrecondition(
        "farmd has no playbooks directory: start it with --playbooks-dir DIR");
  }
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status::Unavailable("farmd is shutting down");
    if (server_address_.empty()) return Status::Unavailable("farmd is not serving yet");
  }
  FARM_RETURN_IF_ERROR(store_->GetHost(name).status());
  FARM_RETURN_IF_ERROR(store_->BeginHostRun(name, clock_->NowUnixMs()));
  auto run = std::make_shared<Run>();
  run->name = name;
  std::list<std::shared_ptr<Run>> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      if ((*it)->done)
        finished.splice(finished.end(), runs_, it++);
      else
        ++it;
    }
    run->thread = std::thread([this, name, run] { Execute(name, run); });
    runs_.push_back(run);
  }
  for (auto& r : finished) r->thread.join();
  if (wait) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&run] { return run->done; });
  }
  return store_->GetHost(name);
}

void HostManager::Stop() {
  std::list<std::shared_ptr<Run>> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& r : runs_) {
      if (r->process != nullptr) r->process->Kill(5000);
    }
    all.swap(runs_);
  }
  for (auto& r : all) {
    if (r->thread.joinable()) r->thread.join();
  }
}

Result<std::string> HostManager::HostToken(const std::string& name) {
  const std::string path = options_.work_dir + "/" + name + "/enroll.token";
  FARM_RETURN_IF_ERROR(fs::MakeDirs(options_.work_dir + "/" + name, 0700));
  if (fs::Exists(path)) {
    FARM_ASSIGN_OR_RETURN(std::string token, fs::ReadFile(path));
    token = TrimSpace(token);
    if (!token.empty()) return token;
  }
  FARM_ASSIGN_OR_RETURN(std::string token, mint_(name));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(path, token + "\n", 0600));
  return token;
}

Status HostManager::Prepare(const store::HostRow& host, const std::string& dir,
                            const std::string& token) {
  InventoryInput in{host.name, host.address, host.kind, VarsOf(host), ""};
  {
    std::lock_guard lock(mu_);
    in.server_address = server_address_;
  }
  FARM_ASSIGN_OR_RETURN(std::string inventory, InventoryYaml(in));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir + "/tmp", 0700));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/inventory.yml", inventory, 0600));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/secrets.yml", SecretVarsYaml(token), 0600));
  std::error_code ec;
  const std::string link = dir + "/group_vars";
  if (!options_.group_vars_dir.empty() && !stdfs::exists(stdfs::symlink_status(link, ec))) {
    stdfs::create_directory_symlink(stdfs::absolute(options_.group_vars_dir, ec), link, ec);
    if (ec) return Status::Internal("linking group_vars: " + ec.message());
  }
  return Status::Ok();
}

void HostManager::Execute(const std::string& name, const std::shared_ptr<Run>& run) {
  RunOutcome out;
  store::HostRow host;
  try {
    auto row = store_->GetHost(name);
    auto token = row.ok() ? HostToken(name) : Result<std::string>(row.status());
    const std::string dir = options_.work_dir + "/" + name;
    Status ready = token.ok() ? Status::Ok() : token.status();
    if (row.ok()) host = *row;
    if (ready.ok()) {
      log::RegisterSecret(*token);
      ready = fs::MakeDirs(dir, 0700);
    }
    if (ready.ok()) ready = Prepare(host, dir, *token);
    if (!ready.ok()) {
      out.error = "preparing the run: " + ready.message();
    } else {
      RunPlaybook(name, PlaybookSpec(name, dir), run, &out);
    }
    // The token file exists only while ansible-playbook runs.
    (void)fs::RemoveAll(dir + "/secrets.yml");
  } catch (const std::exception& e) {
    out.error = std::string("internal error: ") + e.what();
  } catch (...) {
    out.error = "internal error";
  }
  host.name = name;
  store::HostRow result = Finish(host, out);
  Status stored = store_->FinishHostRun(result);
  if (!stored.ok()) log::Warn("recording the run of host " + name + ": " + stored.ToString());
  log::Info("host " + name + " " + result.state + " (changed=" + std::to_string(result.changed) +
            ", failed=" + std::to_string(result.failed) + ")" +
            (result.error.empty() ? "" : ": " + result.error));
  {
    std::lock_guard lock(mu_);
    run->done = true;
  }
  cv_.notify_all();
}

ProcessSpec HostManager::PlaybookSpec(const std::string& name, const std::string& dir) const {
  ProcessSpec spec;
  spec.argv = {options_.ansible_playbook,
               "-i",
               dir + "/inventory.yml",
               options_.playbooks_dir + "/workers.yml",
               "--limit",
               name,
               "-e",
               "@" + dir + "/secrets.yml"};
  spec.cwd = options_.playbooks_dir;
  spec.env = options_.env;
  spec.env["ANSIBLE_CONFIG"] = options_.playbooks_dir + "/ansible.cfg";
  spec.env["ANSIBLE_NOCOLOR"] = "1";
  spec.env["ANSIBLE_FORCE_COLOR"] = "0";
  spec.env["ANSIBLE_RETRY_FILES_ENABLED"] = "false";
  spec.env["ANSIBLE_LOCAL_TEMP"] = dir + "/tmp";
  spec.env["PYTHONUNBUFFERED"] = "1";
  spec.clear_env = true;
  return spec;
}

void HostManager::RunPlaybook(const std::string& name, const ProcessSpec& spec,
                              const std::shared_ptr<Run>& run, RunOutcome* out) {
  auto started = runner_->Start(spec);
  if (!started.ok()) {
    out->error = "cannot run " + options_.ansible_playbook + ": " + started.status().message();
    return;
  }
  std::unique_ptr<Process> process = std::move(*started);
  {
    std::lock_guard lock(mu_);
    run->process = process.get();
    if (stopping_) process->Kill(5000);
  }
  out->started = true;
  std::string buffer;
  size_t buffered = 0;
  int64_t last_flush = clock_->SteadyMs();
  bool in_recap = false;
  auto flush = [&] {
    if (buffer.empty()) return;
    Status s = store_->AppendHostLog(name, buffer);
    if (!s.ok()) log::Warn("storing the log of host " + name + ": " + s.ToString());
    buffer.clear();
    buffered = 0;
    last_flush = clock_->SteadyMs();
  };
  ProcessResult r = process->Wait(
      [&](OutputStream, const std::string& raw) {
        std::string line = log::Redact(raw);
        if (line.rfind("PLAY RECAP", 0) == 0) in_recap = true;
        if (in_recap) {
          if (auto recap = ParseRecapLine(line, name)) out->recap = recap;
        }
        if (LooksLikeFailure(line)) out->failure_line = line.substr(0, kMaxErrorChars);
        buffer += line + "\n";
        if (++buffered >= kFlushLines || clock_->SteadyMs() - last_flush >= kFlushMs) flush();
      },
      options_.timeout_ms);
  flush();
  {
    std::lock_guard lock(mu_);
    run->process = nullptr;
  }
  out->exit_code = r.exit_code;
  out->timed_out = r.timed_out;
}

store::HostRow HostManager::Finish(const store::HostRow& host, const RunOutcome& out) {
  store::HostRow r = host;
  r.finished_ms = clock_->NowUnixMs();
  if (out.recap) {
    r.ok = out.recap->ok;
    r.changed = out.recap->changed;
    r.failed = out.recap->failed;
    r.unreachable = out.recap->unreachable;
  } else {
    r.ok = r.changed = r.failed = r.unreachable = 0;
  }
  r.error = out.error;
  if (r.error.empty() && out.timed_out) {
    r.error = "ansible-playbook ran past " + std::to_string(options_.timeout_ms / 1000) + " s";
  }
  if (r.error.empty() && out.exit_code != 0) {
    r.error = out.failure_line.empty()
                  ? "ansible-playbook exited with code " + std::to_string(out.exit_code)
                  : out.failure_line;
  }
  if (r.error.empty() && !out.recap)
    r.error = "ansible-playbook reported no result for " + host.name;
  if (r.error.empty() && (r.failed > 0 || r.unreachable > 0)) {
    r.error =
        std::to_string(r.failed) + " task(s) failed, unreachable=" + std::to_string(r.unreachable);
  }
  r.error = log::Redact(r.error);
  r.state = r.error.empty() ? "provisioned" : "failed";
  return r;
}

}  // namespace farm::hosts
