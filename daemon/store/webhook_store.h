// WebhookStore: the webhook outbox (migration 023, daemon/notify/). A narrow interface of
// its own beside Store: the SQL store (SQLite and PostgreSQL) implements both, and farmd
// finds it with AsWebhookStore. Thread-safe as the Store is.
#ifndef FARM_DAEMON_STORE_WEBHOOK_STORE_H_
#define FARM_DAEMON_STORE_WEBHOOK_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

class Store;

// One event for one target. States: pending, sending, delivered, failed.
struct WebhookDeliveryRow {
  int64_t id = 0;
  std::string target;
  std::string event_id;  // stable id of the event (coverage/events.h); the Idempotency-Key
  std::string kind;
  std::string payload;  // the JSON body, as sent
  std::string state = "pending";
  int attempts = 0;
  int64_t not_before_ms = 0;
  std::string error;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

class WebhookStore {
 public:
  virtual ~WebhookStore() = default;
  // When `target` was first registered; registers it at now_ms when it is new.
  virtual Result<int64_t> RegisterWebhookTarget(const std::string& target, int64_t now_ms) = 0;
  // Inserts `rows` in one transaction; a row whose (target, event_id) exists is kept as it
  // is. Returns how many were new.
  virtual Result<int> EnqueueWebhookDeliveries(const std::vector<WebhookDeliveryRow>& rows,
                                               int64_t now_ms) = 0;
  // Rows to send now: "sending" ones (a stop interrupted them) and "pending" ones whose
  // not_before has passed, by id, at most `limit`.
  virtual Result<std::vector<WebhookDeliveryRow>> ListDueWebhookDeliveries(int64_t now_ms,
                                                                           int limit) = 0;
  // Stores state, attempts, not_before and error of `row` (by id).
  virtual Status UpdateWebhookDelivery(const WebhookDeliveryRow& row, int64_t now_ms) = 0;
  // The newest rows, at most `limit` (for people and tests).
  virtual Result<std::vector<WebhookDeliveryRow>> ListWebhookDeliveries(int limit) = 0;
};

// The store's WebhookStore, or null for a store without one.
WebhookStore* AsWebhookStore(Store* store);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_WEBHOOK_STORE_H_
