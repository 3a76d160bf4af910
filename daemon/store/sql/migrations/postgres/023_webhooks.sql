-- PostgreSQL form of migrations/023_webhooks.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids.
-- Schema version 23: webhook deliveries (daemon/notify/, docs/coverage.md "Webhooks").
--
-- webhook_targets: when farmd first ran with each configured target: events older than
-- that are not sent to it (a new target does not receive the farm's history).
CREATE TABLE webhook_targets (
  name TEXT PRIMARY KEY,
  created_ms BIGINT NOT NULL
);

-- webhook_deliveries: the outbox, one row per target and event. An event's id is derived
-- from what happened (coverage/events.h), so finding it again inserts nothing: UNIQUE
-- (target, event_id) is what makes the scan idempotent. States: pending, sending (a POST
-- may be in flight; a restart sends it again with the same Idempotency-Key), delivered,
-- failed (attempts exhausted or the receiver refused it for good).
CREATE TABLE webhook_deliveries (
  id BIGSERIAL PRIMARY KEY,
  target TEXT NOT NULL,
  event_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempts BIGINT NOT NULL DEFAULT 0,
  not_before_ms BIGINT NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL,
  UNIQUE (target, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, not_before_ms);
