// Wheel requests (migration 028): rows the requests use case (daemon/requests/) files,
// merges and moves between states.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

RequestStore* AsRequestStore(Store* store) { return dynamic_cast<RequestStore*>(store); }

namespace {

constexpr char kRequestColumns[] =
    "id, request_key, package, version, python, torch, cuda, compute_capability, platform, "
    "state, reason, decided_by, recipe_name, arch_list, build_id, job_id, wheel, filings, "
    "first_by, created_ms, updated_ms";

RequestRow RequestFromRow(const Stmt& s) {
  return ReadMembers<RequestRow>(
      s, &RequestRow::id, &RequestRow::key, &RequestRow::package, &RequestRow::version,
      &RequestRow::python, &RequestRow::torch, &RequestRow::cuda, &RequestRow::compute_capability,
      &RequestRow::platform, &RequestRow::state, &RequestRow::reason, &RequestRow::decided_by,
      &RequestRow::recipe_name, &RequestRow::arch_list, &RequestRow::build_id, &RequestRow::job_id,
      &RequestRow::wheel, &RequestRow::filings, &RequestRow::first_by, &RequestRow::created_ms,
      &RequestRow::updated_ms);
}

RequestFiling FilingFromRow(const Stmt& s) {
  return RequestFiling{
      .request_id = s.Int(0), .principal = s.Text(1), .address = s.Text(2), .created_ms = s.Int(3)};
}

}  // namespace

Status SqlStore::CheckFilingLimit(const RequestFiling& filing, const FilingLimit& limit) {
  if (limit.max < 0) return Status::Ok();
  const bool anonymous = filing.principal.empty();
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare(anonymous ? "SELECT COUNT(*) FROM wheel_request_filings WHERE "
                                       "principal = '' AND address = ? AND created_ms >= ?"
                                     : "SELECT COUNT(*) FROM wheel_request_filings WHERE "
                                       "principal = ? AND created_ms >= ?"));
  s->Bind(anonymous ? filing.address : filing.principal).Bind(limit.since_ms);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (row && s->Int(0) >= limit.max) {
    return Status::ResourceExhausted(std::string(anonymous ? "this address" : filing.principal) +
                                     " filed " + std::to_string(s->Int(0)) +
                                     " requests in the window, its limit");
  }
  return Status::Ok();
}

Result<std::pair<RequestRow, bool>> SqlStore::FileRequest(const RequestRow& r,
                                                          const RequestFiling& filing,
                                                          const FilingLimit& limit) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_RETURN_IF_ERROR(CheckFilingLimit(filing, limit));
  FARM_ASSIGN_OR_RETURN(
      auto ins,
      db_->Prepare("INSERT INTO wheel_requests(request_key, package, version, python, torch, "
                   "cuda, compute_capability, platform, state, first_by, created_ms, "
                   "updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
                   "ON CONFLICT(request_key) DO NOTHING"));
  ins->Bind(r.key).Bind(r.package).Bind(r.version).Bind(r.python).Bind(r.torch).Bind(r.cuda);
  ins->Bind(r.compute_capability).Bind(r.platform).Bind(r.state).Bind(r.first_by);
  ins->Bind(filing.created_ms).Bind(filing.created_ms);
  FARM_RETURN_IF_ERROR(ins->Run());
  const bool created = db_->Changes() > 0;
  FARM_ASSIGN_OR_RETURN(auto sel, db_->Prepare(std::string("SELECT ") + kRequestColumns +
                                               " FROM wheel_requests WHERE request_key = ?"));
  sel->Bind(r.key);
  FARM_ASSIGN_OR_RETURN(bool found, sel->Step());
  if (!found) return Status::Internal("wheel request " + r.key + " vanished while filed");
  RequestRow row = RequestFromRow(*sel);
  FARM_ASSIGN_OR_RETURN(auto add,
                        db_->Prepare("INSERT INTO wheel_request_filings(request_id, principal, "
                                     "address, created_ms) VALUES (?,?,?,?)"));
  add->Bind(row.id).Bind(filing.principal).Bind(filing.address).Bind(filing.created_ms);
  FARM_RETURN_IF_ERROR(add->Run());
  FARM_ASSIGN_OR_RETURN(auto count, db_->Prepare("UPDATE wheel_requests SET filings = filings + 1 "
                                                 "WHERE id = ?"));
  count->Bind(row.id);
  FARM_RETURN_IF_ERROR(count->Run());
  row.filings += 1;
  FARM_RETURN_IF_ERROR(txn.Commit());
  Bump();
  return std::make_pair(std::move(row), created);
}

Result<bool> SqlStore::MoveRequest(int from_state, const RequestRow& to) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("UPDATE wheel_requests SET state = ?, reason = ?, decided_by = ?, "
                           "recipe_name = ?, arch_list = ?, build_id = ?, job_id = ?, wheel = ?, "
                           "updated_ms = ? WHERE id = ? AND state = ?"));
  s->Bind(to.state).Bind(to.reason).Bind(to.decided_by).Bind(to.recipe_name).Bind(to.arch_list);
  s->Bind(to.build_id).Bind(to.job_id).Bind(to.wheel).Bind(to.updated_ms).Bind(to.id);
  s->Bind(from_state);
  return RunWrite(*s);
}

Result<RequestRow> SqlStore::GetRequest(int64_t id) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kRequestColumns +
                                             " FROM wheel_requests WHERE id = ?"));
  s->Bind(id);
  FARM_ASSIGN_OR_RETURN(auto row, ReadOptionalRow(*s, RequestFromRow));
  if (!row) return Status::NotFound("no request " + std::to_string(id));
  return *row;
}

Result<std::vector<RequestRow>> SqlStore::ListRequests(int state, int64_t before_id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kRequestColumns +
                                             " FROM wheel_requests WHERE (? = 0 OR state = ?) "
                                             "AND (? = 0 OR id < ?) ORDER BY id DESC LIMIT ?"));
  s->Bind(state).Bind(state).Bind(before_id).Bind(before_id).Bind(limit);
  return CollectRows(*s, limit, RequestFromRow);
}

Result<std::vector<RequestFiling>> SqlStore::ListRequestFilings(int64_t id, int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare("SELECT request_id, principal, address, created_ms "
                                             "FROM wheel_request_filings WHERE request_id = ? "
                                             "ORDER BY id LIMIT ?"));
  s->Bind(id).Bind(limit);
  return CollectRows(*s, limit, FilingFromRow);
}

}  // namespace farm::store
