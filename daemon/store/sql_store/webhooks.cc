// The webhook outbox (migration 023): rows the notifier (daemon/notify/) sends.
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {

WebhookStore* AsWebhookStore(Store* store) { return dynamic_cast<WebhookStore*>(store); }

namespace {

constexpr char kDeliveryColumns[] =
    "id, target, event_id, kind, payload, state, attempts, not_before_ms, error, created_ms, "
    "updated_ms";

WebhookDeliveryRow DeliveryFromRow(const Stmt& s) {
  return ReadMembers<WebhookDeliveryRow>(
      s, &WebhookDeliveryRow::id, &WebhookDeliveryRow::target, &WebhookDeliveryRow::event_id,
      &WebhookDeliveryRow::kind, &WebhookDeliveryRow::payload, &WebhookDeliveryRow::state,
      &WebhookDeliveryRow::attempts, &WebhookDeliveryRow::not_before_ms, &WebhookDeliveryRow::error,
      &WebhookDeliveryRow::created_ms, &WebhookDeliveryRow::updated_ms);
}

}  // namespace

Result<int64_t> SqlStore::RegisterWebhookTarget(const std::string& target, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto ins, db_->Prepare("INSERT INTO webhook_targets(name, created_ms) "
                                               "VALUES (?, ?) ON CONFLICT(name) DO NOTHING"));
  ins->Bind(target).Bind(now_ms);
  FARM_RETURN_IF_ERROR(ins->Run());
  FARM_ASSIGN_OR_RETURN(auto s,
                        db_->Prepare("SELECT created_ms FROM webhook_targets WHERE name = ?"));
  s->Bind(target);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return Status::Internal("webhook target " + target + " was not stored");
  return s->Int(0);
}

Result<int> SqlStore::EnqueueWebhookDeliveries(const std::vector<WebhookDeliveryRow>& rows,
                                               int64_t now_ms) {
  if (rows.empty()) return 0;
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  int added = 0;
  for (const WebhookDeliveryRow& r : rows) {
    FARM_ASSIGN_OR_RETURN(
        auto s,
        db_->Prepare(
            "INSERT INTO webhook_deliveries(target, event_id, kind, payload, state, created_ms, "
            "updated_ms) VALUES (?,?,?,?,'pending',?,?) ON CONFLICT(target, event_id) DO NOTHING"));
    s->Bind(r.target).Bind(r.event_id).Bind(r.kind).Bind(r.payload).Bind(now_ms).Bind(now_ms);
    FARM_RETURN_IF_ERROR(s->Run());
    added += db_->Changes();
  }
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (added > 0) Bump();
  return added;
}

Result<std::vector<WebhookDeliveryRow>> SqlStore::ListDueWebhookDeliveries(int64_t now_ms,
                                                                           int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(std::string("SELECT ") + kDeliveryColumns +
                   " FROM webhook_deliveries WHERE state = 'sending' OR (state = 'pending' AND "
                   "not_before_ms <= ?) ORDER BY id LIMIT ?"));
  s->Bind(now_ms).Bind(limit);
  return CollectRows(*s, limit, DeliveryFromRow);
}

Status SqlStore::UpdateWebhookDelivery(const WebhookDeliveryRow& row, int64_t now_ms) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s,
      db_->Prepare(
          "UPDATE webhook_deliveries SET state = ?, attempts = ?, not_before_ms = ?, error = ?, "
          "updated_ms = ? WHERE id = ?"));
  s->Bind(row.state)
      .Bind(row.attempts)
      .Bind(row.not_before_ms)
      .Bind(row.error)
      .Bind(now_ms)
      .Bind(row.id);
  FARM_RETURN_IF_ERROR(s->Run());
  Bump();
  return Status::Ok();
}

Result<std::vector<WebhookDeliveryRow>> SqlStore::ListWebhookDeliveries(int limit) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(auto s, db_->Prepare(std::string("SELECT ") + kDeliveryColumns +
                                             " FROM webhook_deliveries ORDER BY id DESC LIMIT ?"));
  s->Bind(limit);
  return CollectRows(*s, limit, DeliveryFromRow);
}

}  // namespace farm::store
