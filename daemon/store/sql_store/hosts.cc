// Hosts farmd provisions (migration 006): the host records and their last run's result
// and log. Each call is one statement or one transaction under the store's mutex.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

constexpr char kHostColumns[] =
    "name, address, kind, vars, state, changed, ok, failed, unreachable, runs, error, "
    "created_ms, started_ms, finished_ms";

HostRow HostFromRow(const Stmt& s) {
  return ReadMembers<HostRow>(s, &HostRow::name, &HostRow::address, &HostRow::kind, &HostRow::vars,
                              &HostRow::state, &HostRow::changed, &HostRow::ok, &HostRow::failed,
                              &HostRow::unreachable, &HostRow::runs, &HostRow::error,
                              &HostRow::created_ms, &HostRow::started_ms, &HostRow::finished_ms);
}

}  // namespace

Status SqlStore::UpsertHost(const HostRow& host, bool replace) {
  Locked lock(this);
  std::string sql =
      "INSERT INTO hosts (name, address, kind, vars, created_ms) VALUES (?, ?, ?, ?, ?)";
  if (replace) {
    sql +=
        " ON CONFLICT(name) DO UPDATE SET address = excluded.address, kind = excluded.kind, "
        "vars = excluded.vars";
  }
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(sql));
  s->Bind(host.name).Bind(host.address).Bind(host.kind).BindBlob(host.vars).Bind(host.created_ms);
  Status st = s->Run();
  if (!st.ok()) {
    if (st.message().find("UNIQUE") != std::string::npos) {
      return Status::AlreadyExists("host " + host.name + " exists (give --replace to change it)");
    }
    return st;
  }
  Bump();
  return Status::Ok();
}

Result<HostRow> SqlStore::GetHost(const std::string& name) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kHostColumns + " FROM hosts WHERE name = ?"));
  s->Bind(name);
  return ReadOneRow(*s, HostFromRow, "no host " + name);
}

Result<std::vector<HostRow>> SqlStore::ListHosts() {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(std::string("SELECT ") + kHostColumns + " FROM hosts ORDER BY name"));
  return CollectRows(*s, 100000, HostFromRow);
}

Status SqlStore::BeginHostRun(const std::string& name, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE hosts SET state = 'provisioning', runs = runs + 1, started_ms = ?, "
          "finished_ms = 0, log = '', error = '' WHERE name = ? AND state != 'provisioning'"));
  s->Bind(now_ms).Bind(name);
  FARM_RETURN_IF_ERROR(s->Run());
  if (db_->Changes() == 0) {
    FARM_ASSIGN_OR_RETURN(auto q, db_->Prepare("SELECT 1 FROM hosts WHERE name = ?"));
    q->Bind(name);
    FARM_ASSIGN_OR_RETURN(bool exists, q->Step());
    if (!exists) return Status::NotFound("no host " + name);
    return Status::FailedPrecondition("host " + name + " is being provisioned already");
  }
  Bump();
  return Status::Ok();
}

Status SqlStore::AppendHostLog(const std::string& name, const std::string& text) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("UPDATE hosts SET log = log || ? WHERE name = ?"));
  s->Bind(text).Bind(name);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  return Status::Ok();
}

Status SqlStore::FinishHostRun(const HostRow& r) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("UPDATE hosts SET state = ?, changed = ?, ok = ?, failed = ?, unreachable = ?, "
                   "error = ?, finished_ms = ? WHERE name = ?"));
  s->Bind(r.state)
      .Bind(r.changed)
      .Bind(r.ok)
      .Bind(r.failed)
      .Bind(r.unreachable)
      .Bind(r.error)
      .Bind(r.finished_ms)
      .Bind(r.name);
  return RunWriteOfOne(*s, "no host " + r.name);
}

Result<std::string> SqlStore::GetHostLog(const std::string& name) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT log FROM hosts WHERE name = ?"));
  s->Bind(name);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return Status::NotFound("no host " + name);
  return s->Text(0);
}

Result<int> SqlStore::FailInterruptedHostRuns(int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare("UPDATE hosts SET state = 'failed', error = 'farmd stopped during the run', "
                   "finished_ms = ? WHERE state = 'provisioning'"));
  s->Bind(now_ms);
  FARM_RETURN_IF_ERROR(s->Run());
  int n = db_->Changes();
  if (n > 0) Bump();
  return n;
}

}  // namespace farm::store
